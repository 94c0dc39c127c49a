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
	// A user of the platform, disabled (so with no records).
	if _, err := s.CreateUser(ctx, data.User{Email: "p@example.com", ExternalID: "platform-9", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateUser(ctx, 2, func(u data.User) (data.User, error) {
		u.Disabled, u.DisabledAt = true, t0.Add(time.Minute)
		return u, nil
	}); err != nil {
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
	if err := s.PutAgentHost(ctx, data.AgentHost{Host: "claude.example", Scopes: []string{"PROFILE_READ"}, AllowedAt: t0}); err != nil {
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
func TestCopyRoundTrip(t *testing.T) { testCopyRoundTrip(t, pgtest.New) }

func testCopyRoundTrip(t *testing.T, newDB func(testing.TB) string) {
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
	if len(want.AuthCodes) != 2 || len(want.Families) != 1 || len(want.Sessions) != 1 || len(want.AgentHosts) != 1 {
		t.Fatalf("bolt Export = %+v", want)
	}
	pg := open(t, newDB(t))
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
	// The users' columns came with them: the external ID finds the user,
	// and the disabled user gets nothing.
	if u, err := pg.GetUserByExternalID(ctx, "platform-9"); err != nil || u.ID != 2 || !u.Disabled || !u.DisabledAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("GetUserByExternalID after Import = %+v, %v", u, err)
	}
	if err := pg.CreateSession(ctx, data.Session{Hash: data.Hash("s-off"), UserID: 2, ExpiresAt: t0.Add(time.Hour)}); !errors.Is(err, data.ErrUserDisabled) {
		t.Fatalf("CreateSession for the imported disabled user: %v; want ErrUserDisabled", err)
	}
	// Disabling an imported user deletes the imported records (found by
	// the user_id columns Import set).
	if _, err := pg.UpdateUser(ctx, 1, func(u data.User) (data.User, error) { u.Disabled = true; return u, nil }); err != nil {
		t.Fatal(err)
	}
	if d, err := pg.Export(ctx); err != nil || len(d.AuthCodes)+len(d.Families)+len(d.Grants)+len(d.Sessions) != 0 {
		t.Fatalf("after disabling user 1 of the copy: %d codes, %d families, %d grants, %d sessions (%v); want none",
			len(d.AuthCodes), len(d.Families), len(d.Grants), len(d.Sessions), err)
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
}

// TestCopyRotates: the refresh token still rotates on a copy.
func TestCopyRotates(t *testing.T) {
	src, err := bolt.Open(filepath.Join(t.TempDir(), "a.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	fill(t, src)
	d, err := src.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pg := open(t, pgtest.New(t))
	if err := pg.Import(ctx, d); err != nil {
		t.Fatal(err)
	}
	if _, err := pg.RotateRefreshToken(ctx, "fam", func(f data.Family) (data.Family, error) { f.TokenHash = data.Hash("rt2"); return f, nil }); err != nil {
		t.Fatal(err)
	}
}

// TestCopyRefusesRecordsOfDisabledUser: a dump holding a session of a
// disabled user (which no store holds) is not imported.
func TestCopyRefusesRecordsOfDisabledUser(t *testing.T) {
	d := data.Dump{
		Users:    []data.User{{ID: 1, Email: "a@example.com", Disabled: true, CreatedAt: t0}},
		Sessions: []data.Session{{Hash: data.Hash("s"), UserID: 1, ExpiresAt: t0.Add(time.Hour)}},
	}
	pg := open(t, pgtest.New(t))
	if err := pg.Import(ctx, d); !errors.Is(err, data.ErrUserDisabled) {
		t.Fatalf("Import = %v; want ErrUserDisabled", err)
	}
	if us, err := pg.ListUsers(ctx); err != nil || len(us) != 0 {
		t.Fatalf("after the refused Import, %d users, %v; want none", len(us), err)
	}
}
