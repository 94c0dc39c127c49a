package postgres_test

import (
	"errors"
	"fmt"
	"net/url"
	"sync"
	"testing"

	"oauthd/data"
	"oauthd/data/postgres"
	"oauthd/data/postgres/pgtest"
)

// rotationsOn opens two counted stores (exec mode, as behind PgBouncer) on
// a new database, the pool of each bounded to conns connections, and
// creates n families b0… through the first. step(k, gen, racer) rotates
// family k from generation gen (token "rt<gen>") to the next, on store 0;
// racer tells racers' successors apart.
func rotationsOn(t *testing.T, conns, n int) ([2]*postgres.Store, *[2]counter, func(k, gen, racer int) (data.Family, error)) {
	t.Helper()
	u, err := url.Parse(pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", fmt.Sprint(conns))
	u.RawQuery = q.Encode()
	ss, cs := countedStoresOn(t, u.String())
	for k := range n {
		newFamily(t, ss[0], fmt.Sprintf("b%d", k))
	}
	step := func(k, gen, racer int) (data.Family, error) {
		p := data.Hash(fmt.Sprintf("rt%d", gen))
		return ss[0].RotateRefreshToken(data.WithPresented(ctx, p), fmt.Sprintf("b%d", k), matching(p, func(f data.Family) (data.Family, error) {
			f.TokenHash, f.PrevHash = data.Hash(fmt.Sprintf("rt%d", gen+1+100*racer)), f.TokenHash
			f.Generation++
			return f, nil
		}))
	}
	return ss, cs, step
}

// rotateAll rotates the n families at once, gens times over, and checks
// that every rotation wins, returns and stores its own successor. It
// returns the statements store 0 sent.
func rotateAll(t *testing.T, ss [2]*postgres.Store, cs *[2]counter, step func(k, gen, racer int) (data.Family, error), n, gens int) int64 {
	t.Helper()
	before := cs[0].queries.Load()
	for gen := range gens {
		var wg sync.WaitGroup
		errs := make([]error, n)
		got := make([]data.Family, n)
		for k := range n {
			wg.Go(func() { got[k], errs[k] = step(k, gen, 0) })
		}
		wg.Wait()
		for k := range n {
			if errs[k] != nil || got[k].Generation != uint64(gen+1) || !data.Equal(got[k].TokenHash, data.Hash(fmt.Sprintf("rt%d", gen+1))) {
				t.Fatalf("generation %d, family %d: %+v, %v; want generation %d", gen, k, got[k], errs[k], gen+1)
			}
			stored, err := ss[1].GetFamily(ctx, fmt.Sprintf("b%d", k))
			if err != nil || stored.Generation != got[k].Generation || !data.Equal(stored.TokenHash, got[k].TokenHash) {
				t.Fatalf("generation %d, family %d: stored %+v, %v; want the returned %+v", gen, k, stored, err, got[k])
			}
		}
	}
	return cs[0].queries.Load() - before
}

// TestRotationBatches: concurrent rotations on one store share statements
// (rotbatch.go), and each still gets its own outcome. First 24 families
// rotated at once, 5 times over, on a pool of 4: every rotation wins, returns and stores its own
// successor, in fewer statements than rotations (store 0 created the
// families, so each rotation is its write alone: famCache). Then two
// racers per family presenting the same token, so that both land in one
// batch: exactly one wins per family and the other sees reuse (the family
// is revoked), as with one statement each.
func TestRotationBatches(t *testing.T) {
	const n, gens = 24, 5
	ss, cs, step := rotationsOn(t, 4, n)
	if q := rotateAll(t, ss, cs, step, n, gens); q >= n*gens {
		t.Errorf("%d rotations took %d statements; want fewer (concurrent rotations batched)", n*gens, q)
	} else {
		t.Logf("%d rotations in %d statements", n*gens, q)
	}

	var wg sync.WaitGroup
	errs := make([]error, 2*n)
	for k := range n {
		for r := range 2 {
			wg.Go(func() { _, errs[2*k+r] = step(k, gens, r) })
		}
	}
	wg.Wait()
	for k := range n {
		ok, reused := 0, 0
		for r := range 2 {
			switch err := errs[2*k+r]; {
			case err == nil:
				ok++
			case errors.Is(err, data.ErrTokenReused), errors.Is(err, data.ErrNotFound):
				reused++
			default:
				t.Fatalf("family %d, racer %d: %v", k, r, err)
			}
		}
		if ok != 1 || reused != 1 {
			t.Fatalf("family %d: %d racers won, %d saw reuse; want 1 and 1", k, ok, reused)
		}
		if _, err := ss[1].GetFamily(ctx, fmt.Sprintf("b%d", k)); !errors.Is(err, data.ErrNotFound) {
			t.Fatalf("family %d after the race: %v; want it revoked", k, err)
		}
	}
}
