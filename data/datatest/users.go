package datatest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"oauthd/data"
)

// Users.

func testUsers(t *testing.T, s data.Store) {
	alice, err := s.CreateUser(ctx, data.User{Email: "Alice@Example.com", Username: "Alice", Name: "Alice A", TimeZone: "Europe/Berlin", PasswordHash: "$argon2id$x", CreatedAt: t0})
	wantErr(t, "CreateUser(alice)", err, nil)
	bob, err := s.CreateUser(ctx, data.User{Email: "bob@example.com", Username: "bob", CreatedAt: t0})
	wantErr(t, "CreateUser(bob)", err, nil)
	if alice.ID != 1 || bob.ID != 2 {
		t.Fatalf("IDs = %d, %d; want 1, 2", alice.ID, bob.ID)
	}
	for _, u := range []data.User{
		{Email: "ALICE@example.COM", Username: "other"},
		{Email: "new@example.com", Username: "aLiCe"},
		{Email: "BOB@EXAMPLE.COM", Username: "bobby"},
	} {
		_, err := s.CreateUser(ctx, u)
		wantErr(t, fmt.Sprintf("CreateUser(%q, %q)", u.Email, u.Username), err, data.ErrExists)
	}
	got, err := s.GetUser(ctx, 1)
	wantErr(t, "GetUser(1)", err, nil)
	mustEqual(t, "GetUser(1)", got, alice)
	for _, login := range []string{"alice@example.com", "ALICE", "Alice@Example.com"} {
		got, err := s.GetUserByLogin(ctx, login)
		wantErr(t, "GetUserByLogin("+login+")", err, nil)
		if got.ID != 1 {
			t.Fatalf("GetUserByLogin(%q).ID = %d; want 1", login, got.ID)
		}
	}
	_, err = s.GetUserByLogin(ctx, "carol")
	wantErr(t, "GetUserByLogin(carol)", err, data.ErrNotFound)
	_, err = s.GetUserByLogin(ctx, "")
	wantErr(t, "GetUserByLogin(empty)", err, data.ErrNotFound)
	_, err = s.GetUser(ctx, 3)
	wantErr(t, "GetUser(3)", err, data.ErrNotFound)
	// A failed create does not use up an ID.
	carol, err := s.CreateUser(ctx, data.User{Email: "carol@example.com", Username: "carol", CreatedAt: t0})
	wantErr(t, "CreateUser(carol)", err, nil)
	if carol.ID != 3 {
		t.Fatalf("carol.ID = %d; want 3", carol.ID)
	}
	list, err := s.ListUsers(ctx)
	wantErr(t, "ListUsers", err, nil)
	mustEqual(t, "ListUsers", list, []data.User{alice, bob, carol})
}

func testCreateUsers(t *testing.T, s data.Store) {
	_, err := s.CreateUser(ctx, data.User{Email: "ann@example.com", Username: "ann", CreatedAt: t0})
	wantErr(t, "CreateUser(ann)", err, nil)
	for _, batch := range [][]data.User{
		{{Email: "x@example.com", Username: "x"}, {Email: "ANN@example.com", Username: "y"}},
		{{Email: "x@example.com", Username: "x"}, {Email: "X@example.com", Username: "z"}},
		{{Email: "x@example.com", ExternalID: "p1"}, {Email: "y@example.com", ExternalID: "p1"}},
	} {
		_, err := s.CreateUsers(ctx, batch)
		wantErr(t, "CreateUsers(clash)", err, data.ErrExists)
		list, _ := s.ListUsers(ctx)
		if len(list) != 1 {
			t.Fatalf("after a refused batch, %d users; want 1 (nothing half-imported)", len(list))
		}
	}
	got, err := s.CreateUsers(ctx, []data.User{
		{Email: "b@example.com", Username: "b", PasswordHash: "$2a$10$x", CreatedAt: t0},
		{Email: "c@example.com", ExternalID: "platform-7", CreatedAt: t0},
	})
	wantErr(t, "CreateUsers", err, nil)
	if len(got) != 2 || got[0].ID != 2 || got[1].ID != 3 {
		t.Fatalf("CreateUsers IDs = %+v; want 2, 3", got)
	}
	u, err := s.GetUserByExternalID(ctx, "platform-7")
	wantErr(t, "GetUserByExternalID", err, nil)
	mustEqual(t, "GetUserByExternalID", u, got[1])
	_, err = s.GetUserByExternalID(ctx, "")
	wantErr(t, "GetUserByExternalID(empty)", err, data.ErrNotFound)
	_, err = s.GetUserByExternalID(ctx, "PLATFORM-7")
	wantErr(t, "GetUserByExternalID(other case)", err, data.ErrNotFound)
}

func testUpdateUser(t *testing.T, s data.Store) {
	a, _ := s.CreateUser(ctx, data.User{Email: "a@example.com", Username: "a", ExternalID: "e-a", CreatedAt: t0})
	_, _ = s.CreateUser(ctx, data.User{Email: "b@example.com", Username: "b", ExternalID: "e-b", CreatedAt: t0})
	for _, change := range []func(*data.User){
		func(u *data.User) { u.Email = "B@example.com" },
		func(u *data.User) { u.Username = "B" },
		func(u *data.User) { u.ExternalID = "e-b" },
	} {
		_, err := s.UpdateUser(ctx, a.ID, func(u data.User) (data.User, error) { change(&u); return u, nil })
		wantErr(t, "UpdateUser(clash)", err, data.ErrExists)
	}
	boom := errors.New("boom")
	_, err := s.UpdateUser(ctx, a.ID, func(u data.User) (data.User, error) { u.Name = "x"; return u, boom })
	wantErr(t, "UpdateUser(error)", err, boom)
	_, err = s.UpdateUser(ctx, 99, func(u data.User) (data.User, error) { return u, nil })
	wantErr(t, "UpdateUser(99)", err, data.ErrNotFound)
	got, err := s.UpdateUser(ctx, a.ID, func(u data.User) (data.User, error) {
		u.Email, u.ExternalID, u.PasswordHash = "a2@example.com", "e-a2", "$argon2id$new"
		return u, nil
	})
	wantErr(t, "UpdateUser", err, nil)
	if back, _ := s.GetUser(ctx, a.ID); back.Email != "a2@example.com" || back.PasswordHash != "$argon2id$new" {
		t.Fatalf("GetUser after update = %+v", back)
	}
	if _, err := s.GetUserByLogin(ctx, "a@example.com"); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("the old email still finds the user: %v", err)
	}
	if _, err := s.GetUserByExternalID(ctx, "e-a"); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("the old external ID still finds the user: %v", err)
	}
	u, err := s.GetUserByExternalID(ctx, "e-a2")
	wantErr(t, "GetUserByExternalID(new)", err, nil)
	mustEqual(t, "GetUserByExternalID(new)", u, got)
	// The freed email can be taken by another user.
	_, err = s.CreateUser(ctx, data.User{Email: "a@example.com", Username: "a-new", CreatedAt: t0})
	wantErr(t, "CreateUser(freed email)", err, nil)
}

func testDisableUser(t *testing.T, s data.Store) {
	u1, _ := s.CreateUser(ctx, data.User{Email: "one@example.com", Username: "one", CreatedAt: t0})
	u2, _ := s.CreateUser(ctx, data.User{Email: "two@example.com", Username: "two", CreatedAt: t0})
	wantErr(t, "CreateClient", s.CreateClient(ctx, newClient("c1")), nil)
	mine := exchanged(t, s, "fam-1", "c1", "tok-1") // newCode is user 1's
	code := newCode("oauthd_ac_unused", "c1")
	wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
	other := newCode("oauthd_ac_other", "c1")
	other.UserID = u2.ID
	wantErr(t, "CreateAuthCode(other)", s.CreateAuthCode(ctx, other), nil)
	sess := data.Session{Hash: data.Hash("s1"), UserID: u1.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	sess2 := data.Session{Hash: data.Hash("s2"), UserID: u2.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	wantErr(t, "CreateSession", s.CreateSession(ctx, sess), nil)
	wantErr(t, "CreateSession(2)", s.CreateSession(ctx, sess2), nil)
	wantErr(t, "PutGrant", s.PutGrant(ctx, data.Grant{UserID: u1.ID, ClientID: "c1", Scopes: []string{"BOOKING_READ"}, CreatedAt: t0}), nil)

	_, err := s.UpdateUser(ctx, u1.ID, func(u data.User) (data.User, error) {
		u.Disabled, u.DisabledAt = true, t0
		return u, nil
	})
	wantErr(t, "UpdateUser(disable)", err, nil)
	_, err = s.GetFamily(ctx, mine.ID)
	wantErr(t, "GetFamily after disable", err, data.ErrNotFound)
	// The family leaves a tombstone, as any revocation does (the feed).
	revs, err := s.ListRevoked(ctx, t0.Add(-time.Hour))
	wantErr(t, "ListRevoked after disable", err, nil)
	if i := slices.IndexFunc(revs, func(r data.Revocation) bool { return r.GrantID == mine.ID }); i < 0 {
		t.Fatalf("ListRevoked after disable = %+v; want the user's family %s", revs, mine.ID)
	} else if want := data.RevocationOf(mine); revs[i].ClientID != want.ClientID || !revs[i].LastIssuedAt.Truncate(time.Microsecond).Equal(want.LastIssuedAt.Truncate(time.Microsecond)) {
		t.Fatalf("ListRevoked after disable: %+v; want %+v", revs[i], want)
	}
	_, _, err = s.ExchangeAuthCode(ctx, code.Hash, familyFrom("fam-2", "tok-2"))
	wantErr(t, "ExchangeAuthCode after disable", err, data.ErrNotFound)
	_, err = s.GetSession(ctx, sess.Hash)
	wantErr(t, "GetSession after disable", err, data.ErrNotFound)
	_, err = s.GetGrant(ctx, u1.ID, "c1")
	wantErr(t, "GetGrant after disable", err, data.ErrNotFound)
	// Nothing new for a disabled user.
	wantErr(t, "CreateSession(disabled)", s.CreateSession(ctx, data.Session{Hash: data.Hash("s3"), UserID: u1.ID, ExpiresAt: t0.Add(time.Hour)}), data.ErrUserDisabled)
	wantErr(t, "CreateAuthCode(disabled)", s.CreateAuthCode(ctx, newCode("oauthd_ac_new", "c1")), data.ErrUserDisabled)
	wantErr(t, "PutGrant(disabled)", s.PutGrant(ctx, data.Grant{UserID: u1.ID, ClientID: "c1", CreatedAt: t0}), data.ErrUserDisabled)
	// The other user keeps everything.
	_, err = s.GetSession(ctx, sess2.Hash)
	wantErr(t, "GetSession(other user)", err, nil)
	_, _, err = s.ExchangeAuthCode(ctx, other.Hash, familyFrom("fam-3", "tok-3"))
	wantErr(t, "ExchangeAuthCode(other user)", err, nil)
	// Enabling restores what may be made, not what was revoked.
	back, err := s.UpdateUser(ctx, u1.ID, func(u data.User) (data.User, error) {
		u.Disabled, u.DisabledAt = false, time.Time{}
		return u, nil
	})
	wantErr(t, "UpdateUser(enable)", err, nil)
	if back.Disabled {
		t.Fatal("user still disabled after enable")
	}
	wantErr(t, "CreateSession(enabled)", s.CreateSession(ctx, data.Session{Hash: data.Hash("s4"), UserID: u1.ID, ExpiresAt: t0.Add(time.Hour)}), nil)
	_, err = s.GetGrant(ctx, u1.ID, "c1")
	wantErr(t, "GetGrant after enable", err, data.ErrNotFound)
}

func testNonces(t *testing.T, s data.Store) {
	k := []byte("handover\x00iss\x00jti-1")
	wantErr(t, "UseNonce", s.UseNonce(ctx, k, t0.Add(time.Minute)), nil)
	wantErr(t, "UseNonce(again)", s.UseNonce(ctx, k, t0.Add(time.Minute)), data.ErrExists)
	wantErr(t, "UseNonce(other)", s.UseNonce(ctx, []byte("other"), t0.Add(time.Hour)), nil)
	r, err := s.GarbageCollect(ctx, t0.Add(2*time.Minute))
	wantErr(t, "GarbageCollect", err, nil)
	if r.Nonces != 1 {
		t.Fatalf("GarbageCollect removed %d nonces; want 1", r.Nonces)
	}
	wantErr(t, "UseNonce(after GC)", s.UseNonce(ctx, k, t0.Add(3*time.Minute)), nil)
	wantErr(t, "UseNonce(other, kept)", s.UseNonce(ctx, []byte("other"), t0.Add(time.Hour)), data.ErrExists)
}

// testCanonicalIdentifiers: emails and usernames are unique under
// ident.Key, however they are spelled (look-alikes included), at create,
// in a batch and at update; a login in any spelling finds the user.
func testCanonicalIdentifiers(t *testing.T, s data.Store) {
	sam, err := s.CreateUser(ctx, data.User{Email: "sam@plat.test", Username: "sam", CreatedAt: t0})
	wantErr(t, "CreateUser(sam)", err, nil)
	dan, err := s.CreateUser(ctx, data.User{Email: "dan@b\u00fccher.example", Username: "stra\u00dfe", CreatedAt: t0})
	wantErr(t, "CreateUser(dan)", err, nil)
	for _, u := range []data.User{
		{Email: "\u017fam@plat.test", Username: "longs"},                              // long s
		{Email: "SAM@PLAT.TEST", Username: "upper"},                                   // case
		{Email: "\uff53\uff41\uff4d@\uff50\uff4c\uff41\uff54.test", Username: "wide"}, // fullwidth
		{Email: "dan@xn--bcher-kva.example", Username: "puny"},                        // IDN
		{Email: "dan@B\u00dcCHER.example", Username: "idnupper"},                      // IDN, case
		{Email: "other@plat.test", Username: "\u017fam"},                              // username long s
		{Email: "other@plat.test", Username: "\uff53\uff41\uff4d"},                    // username fullwidth
		{Email: "other@plat.test", Username: "strasse"},                               // ß is ss
	} {
		_, err := s.CreateUser(ctx, u)
		wantErr(t, fmt.Sprintf("CreateUser(%q, %q)", u.Email, u.Username), err, data.ErrExists)
	}
	_, err = s.CreateUsers(ctx, []data.User{{Email: "kim@plat.test", Username: "kim"}, {Email: "\u212aim@plat.test", Username: "kim2"}})
	wantErr(t, "CreateUsers(kelvin sign in the batch)", err, data.ErrExists)
	for login, want := range map[string]int64{
		"\u017fam@plat.test": sam.ID, "Sam@Plat.Test": sam.ID, "\uff53\uff41\uff4d": sam.ID, "SAM": sam.ID,
		"DAN@xn--bcher-kva.example": dan.ID, "STRASSE": dan.ID,
	} {
		got, err := s.GetUserByLogin(ctx, login)
		wantErr(t, "GetUserByLogin("+login+")", err, nil)
		if got.ID != want {
			t.Errorf("GetUserByLogin(%q) = user %d; want %d", login, got.ID, want)
		}
	}
	// At update: another user cannot take a look-alike of sam's email;
	// sam may respell their own.
	_, err = s.UpdateUser(ctx, dan.ID, func(u data.User) (data.User, error) { u.Email = "\u017fAM@plat.test"; return u, nil })
	wantErr(t, "UpdateUser(dan takes a look-alike of sam's email)", err, data.ErrExists)
	got, err := s.UpdateUser(ctx, sam.ID, func(u data.User) (data.User, error) { u.Email = "Sam@Plat.test"; return u, nil })
	wantErr(t, "UpdateUser(sam respells)", err, nil)
	if got.Email != "Sam@Plat.test" {
		t.Errorf("email after respelling = %q", got.Email)
	}
	if u, err := s.GetUserByLogin(ctx, "sam@plat.test"); err != nil || u.ID != sam.ID {
		t.Errorf("GetUserByLogin after respelling = %d, %v; want %d", u.ID, err, sam.ID)
	}
}
