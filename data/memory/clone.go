package memory

import (
	"slices"

	"oauthd/data"
)

// The clone functions deep-copy records (every slice, every byte slice) and
// normalise their times to UTC, so that a caller never shares memory with the
// store and times round-trip as a persistent backend returns them.

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return slices.Clone(b)
}

func cloneUser(u data.User) data.User {
	u.CreatedAt, u.DisabledAt, u.ProfileUpdatedAt = u.CreatedAt.UTC(), u.DisabledAt.UTC(), u.ProfileUpdatedAt.UTC()
	return u
}

func cloneClient(c data.Client) data.Client {
	c = c.Clone()
	for i := range c.Secrets {
		c.Secrets[i].CreatedAt = c.Secrets[i].CreatedAt.UTC()
		c.Secrets[i].LastUsedAt = c.Secrets[i].LastUsedAt.UTC()
	}
	utcChange(c.Pending)
	utcChange(c.RejectedChange)
	c.CreatedAt = c.CreatedAt.UTC()
	c.UpdatedAt = c.UpdatedAt.UTC()
	return c
}

// utcChange puts p's times (p already a copy, or nil) in UTC.
func utcChange(p *data.ClientChange) {
	if p == nil {
		return
	}
	if p.Secret != nil {
		p.Secret.CreatedAt = p.Secret.CreatedAt.UTC()
		p.Secret.LastUsedAt = p.Secret.LastUsedAt.UTC()
	}
	p.ProposedAt = p.ProposedAt.UTC()
}

func cloneCode(c data.AuthCode) data.AuthCode {
	c.Hash = cloneBytes(c.Hash)
	c.Scopes = slices.Clone(c.Scopes)
	c.CreatedAt = c.CreatedAt.UTC()
	c.ExpiresAt = c.ExpiresAt.UTC()
	c.AuthTime = c.AuthTime.UTC()
	return c
}

func cloneFamily(f data.Family) data.Family {
	f.Scopes = slices.Clone(f.Scopes)
	f.TokenHash = cloneBytes(f.TokenHash)
	f.CodeHash = cloneBytes(f.CodeHash)
	f.PrevHash = cloneBytes(f.PrevHash)
	f.LegacyHash = cloneBytes(f.LegacyHash)
	f.CreatedAt = f.CreatedAt.UTC()
	f.RotatedAt = f.RotatedAt.UTC()
	f.ExpiresAt = f.ExpiresAt.UTC()
	f.AbsoluteExp = f.AbsoluteExp.UTC()
	f.AuthTime = f.AuthTime.UTC()
	return f
}

func cloneGrant(g data.Grant) data.Grant {
	g.Scopes = slices.Clone(g.Scopes)
	g.CreatedAt = g.CreatedAt.UTC()
	g.UpdatedAt = g.UpdatedAt.UTC()
	return g
}

func cloneSession(s data.Session) data.Session {
	s.Hash = cloneBytes(s.Hash)
	s.CreatedAt = s.CreatedAt.UTC()
	s.ExpiresAt = s.ExpiresAt.UTC()
	s.AuthTime = s.AuthTime.UTC()
	return s
}

func cloneKey(k data.SigningKey) data.SigningKey {
	k.Private = cloneBytes(k.Private)
	k.Public = cloneBytes(k.Public)
	k.CreatedAt = k.CreatedAt.UTC()
	k.ActivatedAt = k.ActivatedAt.UTC()
	k.RetiredAt = k.RetiredAt.UTC()
	return k
}

func cloneKeys(ks []data.SigningKey) []data.SigningKey {
	if ks == nil {
		return nil
	}
	out := make([]data.SigningKey, len(ks))
	for i, k := range ks {
		out[i] = cloneKey(k)
	}
	return out
}
