package memory

import (
	"context"
	"oauthd/data"
	"time"
)

// GarbageCollect implements [data.Store.GarbageCollect].
func (s *Store) GarbageCollect(ctx context.Context, now time.Time) (data.GCResult, error) {
	if err := s.lock(ctx, "garbage collect"); err != nil {
		return data.GCResult{}, err
	}
	defer s.mu.Unlock()
	var r data.GCResult
	for k, c := range s.codes {
		if c.ExpiresAt.Before(now) {
			delete(s.codes, k)
			r.AuthCodes++
		}
	}
	for k, f := range s.families {
		if familyExpired(f, now) {
			delete(s.families, k)
			r.Families++
		}
	}
	for k, sess := range s.sessions {
		if sess.ExpiresAt.Before(now) {
			delete(s.sessions, k)
			r.Sessions++
		}
	}
	for k, exp := range s.nonces {
		if exp.Before(now) {
			delete(s.nonces, k)
			r.Nonces++
		}
	}
	for k, rev := range s.revoked {
		if rev.LastIssuedAt.Add(data.RevocationKeep).Before(now) {
			delete(s.revoked, k)
			r.Revocations++
		}
	}
	for k, d := range s.devices {
		if d.ExpiresAt.Before(now) {
			delete(s.devices, k)
			r.DeviceCodes++
		}
	}
	return r, nil
}

// familyExpired reports whether the family's idle or absolute expiry is
// before now. A zero AbsoluteExp means no absolute expiry.
func familyExpired(f data.Family, now time.Time) bool {
	return f.ExpiresAt.Before(now) || (!f.AbsoluteExp.IsZero() && f.AbsoluteExp.Before(now))
}
