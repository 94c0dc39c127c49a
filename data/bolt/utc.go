package bolt

import "oauthd/data"

// The utc functions put a record's times in UTC before it is encoded, so that
// every time read back is in UTC (and Equal to the one written).

func utcUser(u *data.User) {
	u.CreatedAt, u.DisabledAt, u.ProfileUpdatedAt = u.CreatedAt.UTC(), u.DisabledAt.UTC(), u.ProfileUpdatedAt.UTC()
}

func utcClient(c *data.Client) {
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	if len(c.Secrets) > 0 {
		secrets := make([]data.ClientSecret, len(c.Secrets)) // do not write into the caller's slice
		for i, cs := range c.Secrets {
			cs.CreatedAt, cs.LastUsedAt = cs.CreatedAt.UTC(), cs.LastUsedAt.UTC()
			secrets[i] = cs
		}
		c.Secrets = secrets
	}
}

func utcCode(c *data.AuthCode) {
	c.CreatedAt, c.ExpiresAt, c.AuthTime = c.CreatedAt.UTC(), c.ExpiresAt.UTC(), c.AuthTime.UTC()
}

func utcFamily(f *data.Family) {
	f.CreatedAt, f.RotatedAt = f.CreatedAt.UTC(), f.RotatedAt.UTC()
	f.ExpiresAt, f.AbsoluteExp = f.ExpiresAt.UTC(), f.AbsoluteExp.UTC()
	f.AuthTime = f.AuthTime.UTC()
}

func utcGrant(g *data.Grant) { g.CreatedAt, g.UpdatedAt = g.CreatedAt.UTC(), g.UpdatedAt.UTC() }

func utcSession(s *data.Session) {
	s.CreatedAt, s.ExpiresAt, s.AuthTime = s.CreatedAt.UTC(), s.ExpiresAt.UTC(), s.AuthTime.UTC()
}

func utcKeys(ks []data.SigningKey) []data.SigningKey {
	out := make([]data.SigningKey, len(ks))
	for i, k := range ks {
		k.CreatedAt, k.ActivatedAt, k.RetiredAt = k.CreatedAt.UTC(), k.ActivatedAt.UTC(), k.RetiredAt.UTC()
		out[i] = k
	}
	return out
}
