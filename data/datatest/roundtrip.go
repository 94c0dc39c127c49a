package datatest

import (
	"context"
	"errors"
	"testing"
	"time"

	"oauthd/data"
)

// Round trips.

func testUTC(t *testing.T, s data.Store) {
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	local := time.Date(2025, 6, 1, 12, 30, 0, 123456789, zone)
	wantUTC := func(what string, got time.Time) {
		t.Helper()
		if !got.Equal(local) || got.Location() != time.UTC {
			t.Fatalf("%s = %v; want %v in UTC", what, got, local.UTC())
		}
	}
	u, err := s.CreateUser(ctx, data.User{Email: "a@example.com", Username: "a", CreatedAt: local})
	wantErr(t, "CreateUser", err, nil)
	wantUTC("CreateUser().CreatedAt", u.CreatedAt)
	u, _ = s.GetUser(ctx, u.ID)
	wantUTC("User.CreatedAt", u.CreatedAt)

	c := newClient("a")
	c.CreatedAt, c.UpdatedAt, c.Secrets[0].CreatedAt, c.Secrets[0].LastUsedAt = local, local, local, local
	wantErr(t, "CreateClient", s.CreateClient(ctx, c), nil)
	c, _ = s.GetClient(ctx, "a")
	wantUTC("Client.CreatedAt", c.CreatedAt)
	wantUTC("Client.UpdatedAt", c.UpdatedAt)
	wantUTC("ClientSecret.CreatedAt", c.Secrets[0].CreatedAt)
	wantUTC("ClientSecret.LastUsedAt", c.Secrets[0].LastUsedAt)
	// The stored creation time equals the one the caller holds, so an update
	// that keeps it passes ValidateClientChange.
	_, err = s.UpdateClient(ctx, "a", func(c data.Client) (data.Client, error) {
		c.CreatedAt = local
		return c, nil
	})
	wantErr(t, "UpdateClient keeping a local CreatedAt", err, nil)

	code := newCode("oauthd_ac_utc", "a")
	code.CreatedAt, code.ExpiresAt = local, local
	wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
	var seen data.AuthCode
	_, fam, err := s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
		seen = c
		f := newFamily("fam", "a", "rt")
		f.CreatedAt, f.RotatedAt, f.ExpiresAt, f.AbsoluteExp = local, local, local, local
		return f, nil
	})
	wantErr(t, "ExchangeAuthCode", err, nil)
	wantUTC("AuthCode.CreatedAt", seen.CreatedAt)
	wantUTC("AuthCode.ExpiresAt", seen.ExpiresAt)
	wantUTC("ExchangeAuthCode family CreatedAt", fam.CreatedAt)
	fam, _ = s.GetFamily(ctx, "fam")
	wantUTC("Family.CreatedAt", fam.CreatedAt)
	wantUTC("Family.RotatedAt", fam.RotatedAt)
	wantUTC("Family.ExpiresAt", fam.ExpiresAt)
	wantUTC("Family.AbsoluteExp", fam.AbsoluteExp)

	wantErr(t, "PutGrant", s.PutGrant(ctx, data.Grant{UserID: 1, ClientID: "a", Scopes: []string{"PROFILE_READ"}, CreatedAt: local, UpdatedAt: local}), nil)
	g, _ := s.GetGrant(ctx, 1, "a")
	wantUTC("Grant.CreatedAt", g.CreatedAt)
	wantUTC("Grant.UpdatedAt", g.UpdatedAt)

	wantErr(t, "CreateSession", s.CreateSession(ctx, data.Session{Hash: data.Hash("ss"), UserID: 1, CreatedAt: local, ExpiresAt: local}), nil)
	sess, _ := s.GetSession(ctx, data.Hash("ss"))
	wantUTC("Session.CreatedAt", sess.CreatedAt)
	wantUTC("Session.ExpiresAt", sess.ExpiresAt)

	k := newKey("k", data.KeyActive)
	k.CreatedAt, k.ActivatedAt = local, local
	_, err = s.UpdateKeys(ctx, func([]data.SigningKey) ([]data.SigningKey, error) { return []data.SigningKey{k}, nil })
	wantErr(t, "UpdateKeys", err, nil)
	ks, _ := s.ListKeys(ctx)
	wantUTC("SigningKey.CreatedAt", ks[0].CreatedAt)
	wantUTC("SigningKey.ActivatedAt", ks[0].ActivatedAt)
	if !ks[0].RetiredAt.IsZero() {
		t.Fatalf("SigningKey.RetiredAt = %v; want zero", ks[0].RetiredAt)
	}
}

func testCopies(t *testing.T, s data.Store) {
	c := newClient("a")
	wantErr(t, "CreateClient", s.CreateClient(ctx, c), nil)
	c.RedirectURIs[0] = "https://evil.example.com/cb"
	c.Secrets[0].Hash[0] ^= 0xff
	got, _ := s.GetClient(ctx, "a")
	if got.RedirectURIs[0] != "https://app.example.com/callback" || data.Equal(got.Secrets[0].Hash, c.Secrets[0].Hash) {
		t.Fatal("the store kept the caller's slices")
	}
	got.Scopes[0] = "ORG_BOOKING_WRITE"
	got.Secrets[0].Hash[0] ^= 0xff
	again, _ := s.GetClient(ctx, "a")
	if again.Scopes[0] != "BOOKING_READ" || data.Equal(again.Secrets[0].Hash, got.Secrets[0].Hash) {
		t.Fatal("GetClient returned the store's own slices")
	}
	f := exchanged(t, s, "fam", "a", "rt")
	f.TokenHash[0] ^= 0xff
	f.Scopes[0] = "ORG_BOOKING_WRITE"
	stored, _ := s.GetFamily(ctx, "fam")
	if !data.Equal(stored.TokenHash, data.Hash("rt")) || stored.Scopes[0] != "BOOKING_READ" {
		t.Fatal("ExchangeAuthCode returned the store's own slices")
	}
	ks := []data.SigningKey{newKey("k", data.KeyActive)}
	_, err := s.UpdateKeys(ctx, func([]data.SigningKey) ([]data.SigningKey, error) { return ks, nil })
	wantErr(t, "UpdateKeys", err, nil)
	ks[0].Private[0] = 'X'
	list, _ := s.ListKeys(ctx)
	if list[0].Private[0] == 'X' {
		t.Fatal("the store kept the caller's key bytes")
	}
}

func testCancelled(t *testing.T, s data.Store) {
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	calls := map[string]func() error{
		"CreateUser": func() error {
			_, err := s.CreateUser(cctx, data.User{Email: "a@example.com", Username: "a"})
			return err
		},
		"GetUser":        func() error { _, err := s.GetUser(cctx, 1); return err },
		"CreateClient":   func() error { return s.CreateClient(cctx, newClient("a")) },
		"ListClients":    func() error { _, err := s.ListClients(cctx, ""); return err },
		"CreateAuthCode": func() error { return s.CreateAuthCode(cctx, newCode("oauthd_ac_c", "a")) },
		"ExchangeAuthCode": func() error {
			_, _, err := s.ExchangeAuthCode(cctx, data.Hash("x"), familyFrom("f", "t"))
			return err
		},
		"RotateRefreshToken": func() error {
			_, err := s.RotateRefreshToken(cctx, "f", presenting("t", rotateTo("u", t0)))
			return err
		},
		"DeleteFamily":  func() error { return s.DeleteFamily(cctx, "f") },
		"ListRevoked":   func() error { _, err := s.ListRevoked(cctx, t0); return err },
		"CreateSession": func() error { return s.CreateSession(cctx, data.Session{Hash: data.Hash("s")}) },
		"PutGrant":      func() error { return s.PutGrant(cctx, data.Grant{UserID: 1, ClientID: "a"}) },
		"UpdateKeys": func() error {
			_, err := s.UpdateKeys(cctx, func(k []data.SigningKey) ([]data.SigningKey, error) { return k, nil })
			return err
		},
		"GarbageCollect": func() error { _, err := s.GarbageCollect(cctx, t0); return err },
	}
	for name, call := range calls {
		wantErr(t, name, call(), context.Canceled)
	}
	// Nothing was written.
	if _, err := s.GetClient(ctx, "a"); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("GetClient after a cancelled create: %v; want ErrNotFound", err)
	}
	if users, _ := s.ListUsers(ctx); len(users) != 0 {
		t.Fatalf("ListUsers after a cancelled create = %v", users)
	}
}

func testClosed(t *testing.T, s data.Store) {
	wantErr(t, "CreateClient", s.CreateClient(ctx, newClient("a")), nil)
	wantErr(t, "Close", s.Close(), nil)
	// A closed store cannot serve: data.ErrUnavailable (a server
	// shutting down answers 503, never 500).
	_, err := s.GetClient(ctx, "a")
	wantErr(t, "GetClient after Close", err, data.ErrUnavailable)
	wantErr(t, "CreateAuthCode after Close", s.CreateAuthCode(ctx, newCode("oauthd_ac_x", "a")), data.ErrUnavailable)
	_, err = s.RotateRefreshToken(ctx, "f", presenting("t", rotateTo("u", t0)))
	wantErr(t, "RotateRefreshToken after Close", err, data.ErrUnavailable)
	wantErr(t, "UseNonce after Close", s.UseNonce(ctx, []byte("n"), t0), data.ErrUnavailable)
	_, err = s.GetFamily(ctx, "f")
	wantErr(t, "GetFamily after Close", err, data.ErrUnavailable)
}
