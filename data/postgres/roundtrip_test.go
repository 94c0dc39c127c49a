package postgres_test

import (
	"context"
	"fmt"
	"net/url"
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

// TestRotationRoundTrips counts the statements of a rotation: one when the
// same replica rotates a family again (its guess is right), two when
// replicas take turns on one family (the write on the stale guess misses
// and returns the family in the same statement, then the write); before,
// three (the write missed, a read, the write).
func TestRotationRoundTrips(t *testing.T) {
	raw := pgtest.New(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("default_query_exec_mode", "exec")
	u.RawQuery = q.Encode()
	var cs [2]counter
	var ss [2]*postgres.Store
	for i := range ss {
		s, err := postgres.Open(ctx, u.String(), postgres.Options{Migrate: i == 0, Tracer: &cs[i], SessionURL: pgtest.Session(raw)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		ss[i] = s
	}
	code := data.AuthCode{Hash: data.AuthCodeKey("oauthd_ac_rt"), ClientID: "c", UserID: 1, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if err := ss[0].CreateAuthCode(ctx, code); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ss[0].ExchangeAuthCode(ctx, code.Hash, func(data.AuthCode) (data.Family, error) {
		return data.Family{ID: "f", ClientID: "c", UserID: 1, TokenHash: data.Hash("rt0"), Tagged: true, ExpiresAt: t0.Add(time.Hour)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	gen := 0
	rotate := func(i int) (statements int64) {
		t.Helper()
		before, prepared := cs[i].queries.Load(), cs[i].prepares.Load()
		f, err := ss[i].RotateRefreshToken(ctx, "f", matching(data.Hash(fmt.Sprintf("rt%d", gen)), func(f data.Family) (data.Family, error) {
			f.TokenHash = data.Hash(fmt.Sprintf("rt%d", gen+1))
			f.Generation++
			return f, nil
		}))
		if err != nil || f.Generation != uint64(gen+1) {
			t.Fatalf("rotation %d on store %d = generation %d, %v; want %d", gen, i, f.Generation, err, gen+1)
		}
		gen++
		if p := cs[i].prepares.Load() - prepared; p != 0 {
			t.Fatalf("rotation %d prepared %d statements in exec mode", gen, p)
		}
		return cs[i].queries.Load() - before
	}
	for _, tc := range []struct {
		name  string
		order []int
		want  []int64
	}{
		// Store 0 created the family: it knows it.
		{"same replica twice", []int{0, 0, 0}, []int64{1, 1, 1}},
		// Store 1 never saw it: a read, then the write; then store 0's
		// guess is stale, and so on.
		{"alternating replicas", []int{1, 0, 1, 0, 1, 0}, []int64{2, 2, 2, 2, 2, 2}},
		{"back to one replica", []int{0, 0}, []int64{1, 1}},
	} {
		for k, i := range tc.order {
			if got := rotate(i); got != tc.want[k] {
				t.Errorf("%s: rotation %d on store %d took %d statements; want %d", tc.name, k, i, got, tc.want[k])
			}
		}
	}
}
