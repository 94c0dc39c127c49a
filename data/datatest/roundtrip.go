package datatest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"oauthd/data"
)

// Round trips.

// testUTC: every time in every record, wherever it sits (a field, behind a
// pointer, in a slice or a map), comes back from every read Equal to the
// time written and in UTC, whatever zone the writer used. The suite finds
// the times by reflection, and fullRecords must set every field of every
// type it reaches, so a time field added later is tested without anyone
// listing it here.
func testUTC(t *testing.T, s data.Store) {
	r := fullRecords()
	checkCoverage(t, r)
	localize(&r)
	roundTrip(t, s, &r, func(what string, got, written any) {
		t.Helper()
		have, want := timesOf(got), timesOf(written)
		for path, w := range want {
			g, ok := have[path]
			if !ok {
				t.Fatalf("%s: %s is gone (written %v)", what, path, w)
			}
			if !g.Equal(w) || g.Location() != time.UTC {
				t.Fatalf("%s: %s = %v; want %v in UTC", what, path, g, w.UTC())
			}
		}
		for path := range have {
			if _, ok := want[path]; !ok {
				t.Fatalf("%s: %s was not written", what, path)
			}
		}
	})
}

func checkCoverage(t *testing.T, r records) {
	t.Helper()
	if missing := uncovered(r); len(missing) > 0 {
		t.Fatalf("fullRecords leaves %v zero in every record: set them in a fixture, so that the suite covers them", missing)
	}
}

// localize sets every time in r to its own instant (a second and a
// nanosecond after the one before) in a zone other than UTC.
func localize(r *records) {
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	next := t0
	eachTime(reflect.ValueOf(r).Elem(), "", func(string, time.Time) time.Time {
		next = next.Add(time.Second + time.Nanosecond)
		return next.In(zone)
	})
}

// roundTrip writes the records of r to s, an empty store, through each of
// its writers, and calls check with each record read back (from each
// reader, and as the argument of each update function) and the record
// written.
func roundTrip(t *testing.T, s data.Store, r *records, check func(what string, got, written any)) {
	t.Helper()
	users, err := s.CreateUsers(ctx, r.Users)
	wantErr(t, "CreateUsers", err, nil)
	for i, u := range users {
		r.Users[i].ID = u.ID // the store's number
		written := r.Users[i]
		check("CreateUsers()", u, written)
		got, err := s.GetUser(ctx, u.ID)
		wantErr(t, "GetUser", err, nil)
		check("GetUser", got, written)
		got, err = s.GetUserByLogin(ctx, u.Email)
		wantErr(t, "GetUserByLogin", err, nil)
		check("GetUserByLogin", got, written)
		got, err = s.UpdateUser(ctx, u.ID, func(u data.User) (data.User, error) {
			check("UpdateUser's argument", u, written)
			return u, nil
		})
		wantErr(t, "UpdateUser", err, nil)
		check("UpdateUser()", got, written)
	}
	list, err := s.ListUsers(ctx)
	wantErr(t, "ListUsers", err, nil)
	mustEqual(t, "len(ListUsers())", len(list), len(r.Users))
	for i, u := range list {
		check("ListUsers()", u, r.Users[i])
	}

	for _, c := range r.Clients {
		wantErr(t, "CreateClient "+c.ID, s.CreateClient(ctx, c), nil)
		got, err := s.GetClient(ctx, c.ID)
		wantErr(t, "GetClient", err, nil)
		check("GetClient", got, c)
		got, err = s.UpdateClient(ctx, c.ID, func(arg data.Client) (data.Client, error) {
			check("UpdateClient's argument", arg, c)
			return arg, nil
		})
		wantErr(t, "UpdateClient", err, nil)
		check("UpdateClient()", got, c)
	}
	clients, err := s.ListClients(ctx, "")
	wantErr(t, "ListClients", err, nil)
	mustEqual(t, "len(ListClients())", len(clients), len(r.Clients))
	for _, c := range clients {
		i := slices.IndexFunc(r.Clients, func(w data.Client) bool { return w.ID == c.ID })
		if i < 0 {
			t.Fatalf("ListClients() lists %q, which was not written", c.ID)
		}
		check("ListClients()", c, r.Clients[i])
	}

	wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, r.Code), nil)
	wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, r.FreshCode), nil)
	used, _, err := s.ExchangeAuthCode(ctx, r.Code.Hash, familyFrom("never", "never"))
	wantErr(t, "ExchangeAuthCode of a used code", err, data.ErrCodeUsed)
	check("ExchangeAuthCode() of a used code", used, r.Code)
	_, fam, err := s.ExchangeAuthCode(ctx, r.FreshCode.Hash, func(c data.AuthCode) (data.Family, error) {
		check("ExchangeAuthCode's argument", c, r.FreshCode)
		return r.Family, nil
	})
	wantErr(t, "ExchangeAuthCode", err, nil)
	check("ExchangeAuthCode()", fam, r.Family)
	fam, err = s.GetFamily(ctx, r.Family.ID)
	wantErr(t, "GetFamily", err, nil)
	check("GetFamily", fam, r.Family)
	fams, err := s.ListFamilies(ctx, r.Family.ClientID)
	wantErr(t, "ListFamilies", err, nil)
	mustEqual(t, "len(ListFamilies())", len(fams), 1)
	check("ListFamilies()", fams[0], r.Family)
	fam, err = s.RotateRefreshToken(ctx, r.Family.ID, func(f data.Family) (data.Family, error) {
		check("RotateRefreshToken's argument", f, r.Family)
		return f, nil
	})
	wantErr(t, "RotateRefreshToken", err, nil)
	check("RotateRefreshToken()", fam, r.Family)
	wantErr(t, "DeleteFamily", s.DeleteFamily(ctx, r.Family.ID), nil)
	revs, err := s.ListRevoked(ctx, time.Time{})
	wantErr(t, "ListRevoked", err, nil)
	mustEqual(t, "len(ListRevoked())", len(revs), 1)
	check("ListRevoked()", revs[0], data.RevocationOf(r.Family))

	wantErr(t, "PutGrant", s.PutGrant(ctx, r.Grant), nil)
	g, err := s.GetGrant(ctx, r.Grant.UserID, r.Grant.ClientID)
	wantErr(t, "GetGrant", err, nil)
	check("GetGrant", g, r.Grant)
	grants, err := s.ListGrants(ctx, r.Grant.UserID)
	wantErr(t, "ListGrants", err, nil)
	mustEqual(t, "len(ListGrants())", len(grants), 1)
	check("ListGrants()", grants[0], r.Grant)

	wantErr(t, "CreateSession", s.CreateSession(ctx, r.Session), nil)
	sess, err := s.GetSession(ctx, r.Session.Hash)
	wantErr(t, "GetSession", err, nil)
	check("GetSession", sess, r.Session)

	ks, err := s.UpdateKeys(ctx, func([]data.SigningKey) ([]data.SigningKey, error) { return r.Keys, nil })
	wantErr(t, "UpdateKeys", err, nil)
	check("UpdateKeys()", ks, r.Keys)
	ks, err = s.ListKeys(ctx)
	wantErr(t, "ListKeys", err, nil)
	check("ListKeys", ks, r.Keys)
	ks, err = s.UpdateKeys(ctx, func(ks []data.SigningKey) ([]data.SigningKey, error) {
		check("UpdateKeys' argument", ks, r.Keys)
		return ks, nil
	})
	wantErr(t, "UpdateKeys", err, nil)
	check("UpdateKeys() again", ks, r.Keys)
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
		"DeleteFamily":     func() error { return s.DeleteFamily(cctx, "f") },
		"ListRevoked":      func() error { _, err := s.ListRevoked(cctx, t0); return err },
		"ListUserFamilies": func() error { _, err := s.ListUserFamilies(cctx, 1); return err },
		"RevokeApp":        func() error { _, err := s.RevokeApp(cctx, 1, "a"); return err },
		"CreateSession":    func() error { return s.CreateSession(cctx, data.Session{Hash: data.Hash("s")}) },
		"PutGrant":         func() error { return s.PutGrant(cctx, data.Grant{UserID: 1, ClientID: "a"}) },
		"UpdateKeys": func() error {
			_, err := s.UpdateKeys(cctx, func(k []data.SigningKey) ([]data.SigningKey, error) { return k, nil })
			return err
		},
		"GarbageCollect":   func() error { _, err := s.GarbageCollect(cctx, t0); return err },
		"CreateDeviceCode": func() error { return s.CreateDeviceCode(cctx, newDevice("BBBBBBBB", "a"), 5) },
		"UpdateDeviceCode": func() error {
			_, err := s.UpdateDeviceCode(cctx, "BBBBBBBB", func(d data.DeviceCode) (data.DeviceCode, error) { return d, nil })
			return err
		},
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
