package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"oauthd/data"
)

// Bounds of --seed.
const (
	benchMaxSeed     = 100_000_000
	benchSeedWorkers = 256 // concurrent store writes: the backends' group commit batches them
	// benchSeedExpiring is when the --expire-share of the seeded families
	// expire (idle); the others expire as the issuer's would, after 30 days.
	benchSeedExpiring = time.Hour
)

// seedFiller writes n refresh-token families of clientID directly through
// the store, as the authorization_code exchange stores them (a code, then
// ExchangeAuthCode: the family and the code's tombstone), for distinct
// users from firstUser (two families a user);
// from is the index of the first of them among all the seeded ones.
// Their refresh tokens are random and never written anywhere: they fill the
// database; the grants the load drives are issued through the real path.
// No consent grant is written for them: a refresh does not read the
// grants, and bbolt's PutGrant (one bbolt transaction, one fsync each, not
// group-committed) would make the seeding ten times slower.
// A share (0 to 1) of them expires benchSeedExpiring after now. Writes run
// on benchSeedWorkers goroutines; each family is its own transactions.
func seedFiller(ctx context.Context, st data.Store, clientID string, firstUser int64, from, n int, share float64, now time.Time) error {
	var next atomic.Int64
	next.Store(int64(from))
	var firstErr error
	var once sync.Once
	permille := int64(share * 1000)
	var wg sync.WaitGroup
	for range min(benchSeedWorkers, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(from+n) || ctx.Err() != nil {
					return
				}
				idle := 30 * 24 * time.Hour
				if i%1000 < permille {
					idle = benchSeedExpiring
				}
				if err := seedFamily(ctx, st, clientID, firstUser+i/2, now, idle); err != nil {
					once.Do(func() { firstErr = fmt.Errorf("family %d: %w", i, err) })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// seedFamily stores one family as the exchange of a code would, with a
// random refresh-token hash. The exchange function is pure, as the store
// asks: everything random is drawn before it.
func seedFamily(ctx context.Context, st data.Store, clientID string, userID int64, now time.Time, idle time.Duration) error {
	scopes := []string{"PROFILE_READ", "BOOKING_READ"}
	code := data.AuthCode{Hash: data.AuthCodeKey(data.NewAuthCode(now)), ClientID: clientID, UserID: userID,
		RedirectURI: benchRedirectURI, Scopes: scopes, CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGjSstw-cM",
		CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
	if err := st.CreateAuthCode(ctx, code); err != nil {
		return err
	}
	var tok [32]byte
	rand.Read(tok[:])
	id := data.NewFamilyID(time.Now()) // IDs sort by time: the real grants lie among these
	_, _, err := st.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
		return data.Family{ID: id, ClientID: c.ClientID, UserID: c.UserID, Scopes: c.Scopes,
			TokenHash: data.Hash(string(tok[:])), CreatedAt: now, RotatedAt: now, ExpiresAt: now.Add(idle),
			AbsoluteExp: now.Add(90 * 24 * time.Hour), CodeHash: c.Hash, Tagged: true}, nil
	})
	return err
}

// seedReport is what --seed adds to the --emit-tokens report.
type seedReport struct {
	Families    int     `json:"families"`
	Seconds     float64 `json:"seconds"`
	PerS        float64 `json:"families_per_s"`
	HeapMiB     float64 `json:"heap_mib"`
	GCSeconds   float64 `json:"gc_seconds,omitempty"`
	GCFamilies  int     `json:"gc_families,omitempty"`
	GCAuthCodes int     `json:"gc_auth_codes,omitempty"`
	// GCIdleSeconds is a second sweep right after, with nothing left to
	// remove: what every sweep of a steady database costs.
	GCIdleSeconds float64 `json:"gc_idle_seconds,omitempty"`
}

// gcSeeded runs one expiry sweep as if at now + 2 × benchSeedExpiring: it
// removes the expiring share of the seeded families and every seeded
// code's tombstone, and times it; then a second one, which finds nothing.
func gcSeeded(ctx context.Context, st data.Store, now time.Time, r *seedReport) error {
	t0 := time.Now()
	res, err := st.GarbageCollect(ctx, now.Add(2*benchSeedExpiring))
	if err != nil {
		return fmt.Errorf("garbage collect: %w", err)
	}
	r.GCSeconds = time.Since(t0).Seconds()
	r.GCFamilies, r.GCAuthCodes = res.Families, res.AuthCodes
	t0 = time.Now()
	if _, err := st.GarbageCollect(ctx, now.Add(2*benchSeedExpiring)); err != nil {
		return fmt.Errorf("garbage collect: %w", err)
	}
	r.GCIdleSeconds = time.Since(t0).Seconds()
	return nil
}

// heapMiB is the Go heap in use now.
func heapMiB() float64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}
