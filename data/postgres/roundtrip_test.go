package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"oauthd/data"
	"oauthd/data/postgres"
	"oauthd/data/postgres/pgtest"
)

// counter counts the statements a store sends (pgx's tracer). In
// default_query_exec_mode=exec each statement is one round trip (Parse,
// Bind, Describe, Execute and Sync in one flight), and nothing is prepared
// apart (prepares counts that).
type counter struct{ queries, prepares atomic.Int64 }

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.queries.Add(1)
	return ctx
}
func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *counter) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	c.prepares.Add(1)
	return ctx
}
func (c *counter) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// TestRotationRoundTrips counts the statements of a rotation. With the
// rotation promise (data.WithPresented, as the issuer's refresh grant
// makes it): one when the same replica rotates a family again (its guess
// is right), and one when replicas take turns on one family (the stale
// guess, with the presented token as current, is written where the stored
// family is that rotation: promisedSQL); two the first time a replica sees
// the family (a read, the write). Without the promise, taking turns costs
// two (the stale guess judges the token a replay; the delete on it misses
// and returns the family, then the write); before either, three (the
// delete missed, a read, the write).
func TestRotationRoundTrips(t *testing.T) { testRotationRoundTrips(t, pgtest.New) }

func testRotationRoundTrips(t *testing.T, newDB func(testing.TB) string) {
	ss, cs := countedStoresOn(t, newDB(t))
	newFamily(t, ss[0], "f")
	gen := 0
	rotate := func(promise bool, i int) (statements int64) {
		t.Helper()
		before, prepared := cs[i].queries.Load(), cs[i].prepares.Load()
		presented := data.Hash(fmt.Sprintf("rt%d", gen))
		rctx := ctx
		if promise {
			rctx = data.WithPresented(ctx, presented)
		}
		f, err := ss[i].RotateRefreshToken(rctx, "f", matching(presented, func(f data.Family) (data.Family, error) {
			f.TokenHash, f.PrevHash = data.Hash(fmt.Sprintf("rt%d", gen+1)), f.TokenHash
			f.Generation++
			return f, nil
		}))
		if err != nil || f.Generation != uint64(gen+1) || !data.Equal(f.TokenHash, data.Hash(fmt.Sprintf("rt%d", gen+1))) {
			t.Fatalf("rotation %d on store %d = generation %d, %v; want %d", gen, i, f.Generation, err, gen+1)
		}
		stored, err := ss[1-i].GetFamily(ctx, "f")
		if err != nil || stored.Generation != f.Generation || !data.Equal(stored.TokenHash, f.TokenHash) || !data.Equal(stored.PrevHash, presented) {
			t.Fatalf("rotation %d: stored %+v, %v; want the returned successor %+v", gen, stored, err, f)
		}
		gen++
		if p := cs[i].prepares.Load() - prepared; p != 0 {
			t.Fatalf("rotation %d prepared %d statements in exec mode", gen, p)
		}
		return cs[i].queries.Load() - before
	}
	const promise, plain = true, false
	for _, tc := range []struct {
		name    string
		promise bool
		order   []int
		want    []int64
	}{
		// Store 0 created the family: it knows it.
		{"same replica", promise, []int{0, 0, 0}, []int64{1, 1, 1}},
		// Store 1 never saw it: a read, then the write; from then on
		// each store's guess is stale, and the promise writes it.
		{"alternating replicas", promise, []int{1, 0, 1, 0, 1, 0}, []int64{2, 1, 1, 1, 1, 1}},
		{"back to one replica", promise, []int{0, 0}, []int64{1, 1}},
		{"alternating without the promise", plain, []int{1, 0, 1, 0}, []int64{2, 2, 2, 2}},
	} {
		for k, i := range tc.order {
			if got := rotate(tc.promise, i); got != tc.want[k] {
				t.Errorf("%s: rotation %d on store %d took %d statements; want %d", tc.name, k, i, got, tc.want[k])
			}
		}
	}
}

// countedStoresOn opens two stores (two replicas) on the database at raw
// in exec mode, each with a statement counter.
func countedStoresOn(t *testing.T, raw string) ([2]*postgres.Store, *[2]counter) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("default_query_exec_mode", "exec")
	u.RawQuery = q.Encode()
	cs := new([2]counter)
	var ss [2]*postgres.Store
	for i := range ss {
		s, err := postgres.Open(ctx, u.String(), postgres.Options{Migrate: i == 0, Tracer: &cs[i], SessionURL: pgtest.Session(raw)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		ss[i] = s
	}
	return ss, cs
}

// newFamily creates the family id (current token "rt0", scopes a and b)
// through s, which then knows it.
func newFamily(t *testing.T, s *postgres.Store, id string) {
	t.Helper()
	code := data.AuthCode{Hash: data.AuthCodeKey("oauthd_ac_" + id), ClientID: "c", UserID: 1, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if err := s.CreateAuthCode(ctx, code); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ExchangeAuthCode(ctx, code.Hash, func(data.AuthCode) (data.Family, error) {
		return data.Family{ID: id, ClientID: "c", UserID: 1, Scopes: []string{"a", "b"}, TokenHash: data.Hash("rt0"), Tagged: true,
			RotatedAt: t0, ExpiresAt: t0.Add(time.Hour), AbsoluteExp: t0.Add(24 * time.Hour)}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestRotationPromiseDecidesOnTheStoredFamily: the one-statement rotation
// of a stale guess (promisedSQL) writes only where the update would have
// rotated the stored family the same way; anywhere else the update decides
// on the stored family, as without the promise. A replica whose guess is
// stale neither misses a replay, nor widens scopes narrowed elsewhere, nor
// extends an expiry that moved.
func TestRotationPromiseDecidesOnTheStoredFamily(t *testing.T) {
	testRotationPromiseDecidesOnTheStoredFamily(t, pgtest.New)
}

func testRotationPromiseDecidesOnTheStoredFamily(t *testing.T, newDB func(testing.TB) string) {
	ss, _ := countedStoresOn(t, newDB(t))
	// rot rotates id on store i presenting tok, to next; narrow, when
	// set, keeps only those scopes (the client lost the others).
	rot := func(i int, id, tok, next string, narrow []string) (data.Family, error) {
		presented := data.Hash(tok)
		return ss[i].RotateRefreshToken(data.WithPresented(ctx, presented), id, matching(presented, func(f data.Family) (data.Family, error) {
			if narrow != nil {
				f.Scopes = narrow
			}
			f.TokenHash, f.PrevHash = data.Hash(next), f.TokenHash
			f.Generation++
			f.ExpiresAt = f.ExpiresAt.Add(time.Minute)
			return f, nil
		}))
	}
	must := func(f data.Family, err error) data.Family {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	// A replay: store 1 knows rt1 as current; store 0 rotated rt1 to rt2.
	newFamily(t, ss[0], "replay")
	must(rot(0, "replay", "rt0", "rt1", nil))
	must(rot(1, "replay", "rt1", "rt2", nil)) // store 1 now knows it (rt2)
	must(rot(0, "replay", "rt2", "rt3", nil)) // store 1's guess is stale
	if _, err := rot(1, "replay", "rt2", "rt9", nil); !errors.Is(err, data.ErrTokenReused) {
		t.Fatalf("a replay of rt2 on the replica whose guess has rt2 current: %v; want ErrTokenReused", err)
	}
	if _, err := ss[0].GetFamily(ctx, "replay"); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("the replayed family: %v; want it revoked", err)
	}
	// The same where store 1's guess has another token as current than
	// the one replayed (the one-statement write is tried, and misses).
	newFamily(t, ss[0], "replay2")
	must(rot(1, "replay2", "rt0", "rt1", nil)) // store 1 knows rt1
	must(rot(0, "replay2", "rt1", "rt2", nil))
	must(rot(0, "replay2", "rt2", "rt3", nil))
	if _, err := rot(1, "replay2", "rt2", "rt9", nil); !errors.Is(err, data.ErrTokenReused) {
		t.Fatalf("a replay of rt2 on the replica whose guess has rt1 current: %v; want ErrTokenReused", err)
	}
	if _, err := ss[0].GetFamily(ctx, "replay2"); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("the replayed family: %v; want it revoked", err)
	}

	// Narrowed elsewhere: store 1's guess has scopes a and b, store 0
	// kept only a. The rotation on store 1 keeps only a.
	newFamily(t, ss[0], "narrow")
	must(rot(1, "narrow", "rt0", "rt1", nil))
	must(rot(0, "narrow", "rt1", "rt2", []string{"a"}))
	f := must(rot(1, "narrow", "rt2", "rt3", nil))
	if !slices.Equal(f.Scopes, []string{"a"}) || f.Generation != 3 {
		t.Fatalf("rotation on a stale guess after a narrowing: scopes %v, generation %d; want [a], 3", f.Scopes, f.Generation)
	}

	// The stored family expires earlier than the guess says (another
	// replica's clock): store 1 decides on the stored family.
	newFamily(t, ss[0], "expiry")
	must(rot(1, "expiry", "rt0", "rt1", nil))
	must(rot(0, "expiry", "rt1", "rt2", nil))
	if _, err := ss[0].Pool().Exec(ctx, `UPDATE families SET expires_ns = expires_ns - 3600000000000,
		body = jsonb_set(body, '{expires_at}', to_jsonb($2::text)) WHERE id = $1`, "expiry", t0.Format(time.RFC3339Nano)); err != nil {
		t.Fatal(err)
	}
	f = must(rot(1, "expiry", "rt2", "rt3", nil))
	if !f.ExpiresAt.Equal(t0.Add(time.Minute)) || f.Generation != 3 {
		t.Fatalf("rotation on a stale guess after the expiry moved earlier: expires %s, generation %d; want %s (the stored expiry plus a minute), 3",
			f.ExpiresAt, f.Generation, t0.Add(time.Minute))
	}
}

// TestRotationPromiseOneWinner: racers on both stores present the family's
// current token with the rotation promise, where store 0's guess is stale
// (its one-statement write races store 1's write on its right guess):
// exactly one stores its successor, and the others see reuse (the family
// is revoked) or find it gone.
func TestRotationPromiseOneWinner(t *testing.T) { testRotationPromiseOneWinner(t, pgtest.New) }

func testRotationPromiseOneWinner(t *testing.T, newDB func(testing.TB) string) {
	ss, _ := countedStoresOn(t, newDB(t))
	for round := range 5 {
		id := fmt.Sprintf("race%d", round)
		newFamily(t, ss[1], id)
		step := func(i int, from, to string) {
			t.Helper()
			p := data.Hash(from)
			if _, err := ss[i].RotateRefreshToken(data.WithPresented(ctx, p), id, matching(p, func(f data.Family) (data.Family, error) {
				f.TokenHash, f.PrevHash = data.Hash(to), f.TokenHash
				f.Generation++
				return f, nil
			})); err != nil {
				t.Fatal(err)
			}
		}
		step(0, "rt0", "rt1") // store 0 knows rt1
		step(1, "rt1", "rt2") // store 1 knows rt2; store 0's guess is stale
		p := data.Hash("rt2")
		errs := race(30, ss, func(i int, s *postgres.Store) error {
			_, err := s.RotateRefreshToken(data.WithPresented(ctx, p), id, matching(p, func(f data.Family) (data.Family, error) {
				f.TokenHash, f.PrevHash = data.Hash(fmt.Sprintf("rt-%d", i)), f.TokenHash
				f.Generation++
				return f, nil
			}))
			return err
		})
		ok, reused, gone := count(errs, nil), count(errs, data.ErrTokenReused), count(errs, data.ErrNotFound)
		if ok != 1 || ok+reused+gone != len(errs) || reused < 1 {
			t.Fatalf("round %d: %d rotations won, %d saw reuse, %d found no family (errors %v); want exactly 1 winner and the rest reuse or gone", round, ok, reused, gone, errs)
		}
		if _, err := ss[0].GetFamily(ctx, id); !errors.Is(err, data.ErrNotFound) {
			t.Fatalf("round %d: GetFamily after the race: %v; want the family revoked", round, err)
		}
	}
}
