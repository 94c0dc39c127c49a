package data

import "slices"

// Record is every type a [Store] keeps and returns.
type Record interface {
	User | Client | AuthCode | Family | Grant | Session | SigningKey | []SigningKey | Revocation | AgentHost | DeviceCode
}

// Normalize returns r as every store keeps it and gives it back, so that
// the backends return the same record, to reflect.DeepEqual, whatever
// the caller passed in:
//
//   - a deep copy: no slice, byte slice or pointer of the result shares
//     memory with r;
//   - every time in UTC, without a monotonic clock reading (what
//     time.Time.UTC returns), as a time decoded from a store reads back;
//   - an empty slice of a field whose JSON tag has omitempty is nil (JSON
//     does not write it, so it reads back as nil); other empty slices stay
//     empty, not nil.
//
// Every backend calls it on each record before it stores it, and the
// memory store on each record it returns too; data/datatest checks, by
// reflection over every field, that each backend returns Normalize of
// what was written. A new field of a stored type gets its line here (see
// the package documentation's checklist).
func Normalize[R Record](r R) R {
	switch p := any(&r).(type) {
	case *User:
		p.CreatedAt, p.DisabledAt, p.ProfileUpdatedAt = p.CreatedAt.UTC(), p.DisabledAt.UTC(), p.ProfileUpdatedAt.UTC()
	case *Client:
		*p = normalizeClient(*p)
	case *AuthCode:
		p.Hash = slices.Clone(p.Hash)
		p.Scopes = slices.Clone(p.Scopes)
		p.Resources = slices.Clone(omitEmpty(p.Resources))
		p.CreatedAt, p.ExpiresAt, p.AuthTime = p.CreatedAt.UTC(), p.ExpiresAt.UTC(), p.AuthTime.UTC()
	case *Family:
		p.Resources = slices.Clone(omitEmpty(p.Resources))
		p.Scopes = slices.Clone(p.Scopes)
		p.TokenHash = slices.Clone(p.TokenHash)
		p.CodeHash = cloneOmitEmpty(p.CodeHash)
		p.PrevHash = cloneOmitEmpty(p.PrevHash)
		p.LegacyHash = cloneOmitEmpty(p.LegacyHash)
		p.CreatedAt, p.RotatedAt = p.CreatedAt.UTC(), p.RotatedAt.UTC()
		p.ExpiresAt, p.AbsoluteExp, p.AuthTime = p.ExpiresAt.UTC(), p.AbsoluteExp.UTC(), p.AuthTime.UTC()
	case *Grant:
		p.Scopes = slices.Clone(p.Scopes)
		p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	case *Session:
		p.Hash = slices.Clone(p.Hash)
		p.CreatedAt, p.ExpiresAt, p.AuthTime = p.CreatedAt.UTC(), p.ExpiresAt.UTC(), p.AuthTime.UTC()
	case *SigningKey:
		*p = normalizeKey(*p)
	case *[]SigningKey:
		if *p != nil {
			ks := make([]SigningKey, len(*p))
			for i, k := range *p {
				ks[i] = normalizeKey(k)
			}
			*p = ks
		}
	case *Revocation:
		p.LastIssuedAt = p.LastIssuedAt.UTC()
	case *AgentHost:
		*p = NormalizeAgentHost(*p)
	case *DeviceCode:
		p.Hash = slices.Clone(p.Hash)
		p.Scopes = slices.Clone(p.Scopes)
		p.CreatedAt, p.ExpiresAt, p.LastPoll = p.CreatedAt.UTC(), p.ExpiresAt.UTC(), p.LastPoll.UTC()
	default:
		panic("data.Normalize: no case for a Record type") // unreachable: the cases match Record
	}
	return r
}

func normalizeClient(c Client) Client {
	c = c.Clone()
	c.Secrets = omitEmpty(c.Secrets)
	for i := range c.Secrets {
		c.Secrets[i] = normalizeSecret(c.Secrets[i])
	}
	c.Usage = omitEmpty(c.Usage)
	c.Review.Scopes = omitEmpty(c.Review.Scopes)
	c.PostLogoutRedirectURIs = omitEmpty(c.PostLogoutRedirectURIs)
	c.GrantTypes = omitEmpty(c.GrantTypes)
	c.Pending = normalizeChange(c.Pending)
	c.RejectedChange = normalizeChange(c.RejectedChange)
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c
}

// normalizeChange normalizes p, a copy of its own (or nil), in place.
func normalizeChange(p *ClientChange) *ClientChange {
	if p == nil {
		return nil
	}
	p.AddScopes = omitEmpty(p.AddScopes)
	p.AddRedirectURIs = omitEmpty(p.AddRedirectURIs)
	p.AddPostLogoutRedirectURIs = omitEmpty(p.AddPostLogoutRedirectURIs)
	p.AddGrantTypes = omitEmpty(p.AddGrantTypes)
	if p.Secret != nil {
		*p.Secret = normalizeSecret(*p.Secret)
	}
	p.ProposedAt = p.ProposedAt.UTC()
	return p
}

func normalizeSecret(s ClientSecret) ClientSecret {
	s.CreatedAt, s.LastUsedAt = s.CreatedAt.UTC(), s.LastUsedAt.UTC()
	return s
}

func normalizeKey(k SigningKey) SigningKey {
	k.Private = slices.Clone(k.Private)
	k.Public = slices.Clone(k.Public)
	k.CreatedAt, k.ActivatedAt, k.RetiredAt = k.CreatedAt.UTC(), k.ActivatedAt.UTC(), k.RetiredAt.UTC()
	return k
}

// omitEmpty is s, or nil when s is empty: what an omitempty field reads
// back as. It does not copy.
func omitEmpty[S ~[]E, E any](s S) S {
	if len(s) == 0 {
		return nil
	}
	return s
}

// cloneOmitEmpty is a copy of b, or nil when b is empty.
func cloneOmitEmpty(b []byte) []byte { return slices.Clone(omitEmpty(b)) }
