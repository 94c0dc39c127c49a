package postgres_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"oauthd/data"
	"oauthd/data/bolt"
	"oauthd/data/postgres"
	"oauthd/data/postgres/pgtest"
)

// fill writes one record of every kind (and a used code) into s.
func fill(t *testing.T, s data.Store) {
	t.Helper()
	if _, err := s.CreateUser(ctx, data.User{Email: "a@example.com", Username: "a", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateClient(ctx, client("c")); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"oauthd_ac_used", "oauthd_ac_live"} {
		code := data.AuthCode{Hash: data.AuthCodeKey(name), ClientID: "c", UserID: 1, Scopes: []string{"BOOKING_READ"}, CreatedAt: t0, ExpiresAt: t0.Add(time.Duration(i+1) * time.Hour)}
		if err := s.CreateAuthCode(ctx, code); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.ExchangeAuthCode(ctx, data.AuthCodeKey("oauthd_ac_used"), func(c data.AuthCode) (data.Family, error) {
		return data.Family{ID: "fam", ClientID: "c", UserID: 1, Scopes: c.Scopes, TokenHash: data.Hash("rt"), CodeHash: c.Hash, CreatedAt: t0, RotatedAt: t0, ExpiresAt: t0.Add(time.Hour), AbsoluteExp: t0.Add(48 * time.Hour)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutGrant(ctx, data.Grant{UserID: 1, ClientID: "c", Scopes: []string{"BOOKING_READ"}, CreatedAt: t0, UpdatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(ctx, data.Session{Hash: data.Hash("ss"), UserID: 1, CSRF: "x", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateKeys(ctx, func([]data.SigningKey) ([]data.SigningKey, error) {
		return []data.SigningKey{{KID: "k", Alg: "ES256", State: data.KeyActive, Private: []byte("sealed"), Sealed: true, Public: []byte("{}"), CreatedAt: t0}}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestCopyRoundTrip: bbolt → PostgreSQL → bbolt keeps every record as it
// was, and an import into a store with records is refused.
func TestCopyRoundTrip(t *testing.T) {
	src, err := bolt.Open(filepath.Join(t.TempDir(), "a.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	fill(t, src)
	want, err := src.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.AuthCodes) != 2 || len(want.Families) != 1 || len(want.Sessions) != 1 {
		t.Fatalf("bolt Export = %+v", want)
	}
	pg := open(t, pgtest.New(t))
	if err := pg.Import(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := pg.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PostgreSQL Export after Import =\n%+v\nwant\n%+v", got, want)
	}
	if err := pg.Import(ctx, want); !errors.Is(err, postgres.ErrNotEmpty) {
		t.Fatalf("second Import: %v; want ErrNotEmpty", err)
	}
	back, err := bolt.Open(filepath.Join(t.TempDir(), "b.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if err := back.Import(ctx, got); err != nil {
		t.Fatal(err)
	}
	again, err := back.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, want) {
		t.Fatalf("bolt Export after the round trip =\n%+v\nwant\n%+v", again, want)
	}
	if err := back.Import(ctx, got); !errors.Is(err, bolt.ErrNotEmpty) {
		t.Fatalf("second bolt Import: %v; want ErrNotEmpty", err)
	}
	// The refresh token still rotates on the copy.
	if _, err := pg.RotateRefreshToken(ctx, "fam", func(f data.Family) (data.Family, error) { f.TokenHash = data.Hash("rt2"); return f, nil }); err != nil {
		t.Fatal(err)
	}
}
