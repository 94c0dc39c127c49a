package postgres

import (
	"context"
	"fmt"
	"oauthd/data"
	"time"
)

// gc deletes every expired code, family, session and nonce in one statement,
// and moves up the gc_ns of the families it found alive (see the
// migration).
const gc = `WITH a AS (DELETE FROM auth_codes WHERE expires_ns < $1 RETURNING 1),
	f AS (DELETE FROM families WHERE gc_ns < $1 AND expires_ns < $1 RETURNING 1),
	fl AS (UPDATE families SET gc_ns = expires_ns WHERE gc_ns < $1 AND expires_ns >= $1),
	s AS (DELETE FROM sessions WHERE expires_ns < $1 RETURNING 1),
	n AS (DELETE FROM nonces WHERE expires_ns < $1 RETURNING 1),
	r AS (DELETE FROM revoked_grants WHERE issued_ns < $2 RETURNING 1),
	d AS (DELETE FROM device_codes WHERE expires_ns < $1 RETURNING 1)
SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM f), (SELECT count(*) FROM s), (SELECT count(*) FROM n), (SELECT count(*) FROM r), (SELECT count(*) FROM d)`

// GarbageCollect implements [data.Store.GarbageCollect].
func (s *Store) GarbageCollect(ctx context.Context, now time.Time) (data.GCResult, error) {
	if err := s.begin(ctx, "garbage collect"); err != nil {
		return data.GCResult{}, err
	}
	var a, f, ss, n, r, d int64
	err := retry(ctx, func() error {
		return s.pool.QueryRow(ctx, gc, unixNano(now), unixNano(now.Add(-data.RevocationKeep))).Scan(&a, &f, &ss, &n, &r, &d)
	})
	if err != nil {
		return data.GCResult{}, fmt.Errorf("garbage collect: %w", err)
	}
	return data.GCResult{AuthCodes: int(a), Families: int(f), Sessions: int(ss), Nonces: int(n), Revocations: int(r), DeviceCodes: int(d)}, nil
}
