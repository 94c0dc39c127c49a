package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
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
	// With a backend's SeedFamilies: families a batch (one transaction);
	// batches are written benchSeedBulkWorkers() at a time.
	benchSeedBatch = 5000
	// benchSeedGroups bounds the groups of real grants (--grants) made
	// between slices of the seeded families.
	benchSeedGroups = 100
	// benchSeedExpiring is when the --expire-share of the seeded families
	// expire (idle); the others expire as the issuer's would, after 30 days.
	benchSeedExpiring = time.Hour
)

// familySeeder is a backend's benchmark-only bulk path (data/postgres's
// SeedFamilies): fams[i] and codes[i]'s tombstone written as the exchange
// of codes[i] into fams[i] writes them, the whole batch at once.
type familySeeder interface {
	SeedFamilies(ctx context.Context, fams []data.Family, codes []data.AuthCode) error
}

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
// A share (0 to 1) of them expires benchSeedExpiring after now. With bulk
// (the same backend's SeedFamilies) they are written benchSeedBatch at a
// time on benchSeedBulkWorkers() goroutines; otherwise each family is its
// own transactions, on benchSeedWorkers goroutines.
func seedFiller(ctx context.Context, st data.Store, bulk familySeeder, clientID string, firstUser int64, from, n int, share float64, now time.Time) error {
	step, workers := int64(1), benchSeedWorkers
	if bulk != nil {
		step, workers = benchSeedBatch, benchSeedBulkWorkers()
	}
	var next atomic.Int64
	next.Store(int64(from))
	var firstErr error
	var once sync.Once
	permille := int64(share * 1000)
	record := func(i int64) (data.AuthCode, data.Family) {
		idle := 30 * 24 * time.Hour
		if i%1000 < permille {
			idle = benchSeedExpiring
		}
		return seedRecords(clientID, firstUser+i/2, i, now, idle)
	}
	end := int64(from + n)
	var wg sync.WaitGroup
	for range min(workers, max(n, 1)) {
		wg.Go(func() {
			var codes []data.AuthCode
			var fams []data.Family
			for {
				i := next.Add(step) - step
				if i >= end || ctx.Err() != nil {
					return
				}
				var err error
				if bulk == nil {
					c, f := record(i)
					err = seedFamily(ctx, st, c, f)
				} else {
					codes, fams = codes[:0], fams[:0]
					for j := i; j < min(i+step, end); j++ {
						c, f := record(j)
						codes, fams = append(codes, c), append(fams, f)
					}
					err = bulk.SeedFamilies(ctx, fams, codes)
				}
				if err != nil {
					once.Do(func() { firstErr = fmt.Errorf("family %d: %w", i, err) })
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// benchSeedBulkWorkers is how many batches seedFiller writes at a time:
// one per core (the database's side of a COPY is one backend), at least 3
// so that building a batch here overlaps writing the others.
func benchSeedBulkWorkers() int { return max(3, runtime.NumCPU()) }

// seedRecords is seeded grant number seq, of userID: its code, and the
// family the exchange of that code makes, with a random refresh-token hash.
// The code's key is not the hash of a code (no one holds these codes): it
// is seq, big-endian, then random bytes, so that the keys of a seed
// increase and bbolt appends them. Random keys, as real codes' hashes are,
// put every tombstone on a random page of a tree of N of them, and at 10 M
// the writes of the seed grew to tens of times the file; in service the
// codes are only those of the last minutes, and the seed's sweep removes
// all of these.
func seedRecords(clientID string, userID, seq int64, now time.Time, idle time.Duration) (data.AuthCode, data.Family) {
	key := binary.BigEndian.AppendUint64(make([]byte, 0, 32), uint64(seq))
	key = append(key, make([]byte, 24)...)
	rand.Read(key[8:])
	code := data.AuthCode{Hash: key, ClientID: clientID, UserID: userID,
		RedirectURI: benchRedirectURI, Scopes: []string{"PROFILE_READ", "BOOKING_READ"}, CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGjSstw-cM",
		CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
	var tok [32]byte
	rand.Read(tok[:])
	id := data.NewFamilyID(time.Now()) // IDs sort by time: the real grants lie among these
	return code, data.Family{ID: id, ClientID: code.ClientID, UserID: code.UserID, Scopes: code.Scopes,
		TokenHash: data.Hash(string(tok[:])), CreatedAt: now, RotatedAt: now, ExpiresAt: now.Add(idle),
		AbsoluteExp: now.Add(90 * 24 * time.Hour), CodeHash: code.Hash, Tagged: true}
}

// seedFamily stores code, and fam as the exchange of code, through the
// store's real path. The exchange function is pure, as the store asks:
// everything random was drawn before it.
func seedFamily(ctx context.Context, st data.Store, code data.AuthCode, fam data.Family) error {
	if err := st.CreateAuthCode(ctx, code); err != nil {
		return err
	}
	_, _, err := st.ExchangeAuthCode(ctx, code.Hash, func(data.AuthCode) (data.Family, error) { return fam, nil })
	return err
}

// seedReport is what --seed adds to the --emit-tokens report.
type seedReport struct {
	Families int     `json:"families"`
	Seconds  float64 `json:"seconds"` // all of it, the real grants too
	// PerS is seeded families a second, the real grants' time left out.
	PerS float64 `json:"families_per_s"`
	// GrantsSeconds is the time the real grants (--grants) took.
	GrantsSeconds float64 `json:"grants_seconds"`
	// Bulk: the backend's SeedFamilies wrote the families (COPY on
	// PostgreSQL); false: one code exchange each.
	Bulk        bool    `json:"bulk"`
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
