package datatest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"oauthd/data"
)

// Connected apps: a user's families by client, and removing one app.

// familyIDs returns the IDs of fs, in order.
func familyIDs(fs []data.Family) []string {
	ids := []string{}
	for _, f := range fs {
		ids = append(ids, f.ID)
	}
	return ids
}

// exchangedFor is exchanged for another user than newCode's.
func exchangedFor(t *testing.T, s data.Store, userID int64, id, clientID, token string) data.Family {
	t.Helper()
	code := newCode("oauthd_ac_"+id, clientID)
	code.UserID = userID
	wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
	_, f, err := s.ExchangeAuthCode(ctx, code.Hash, familyOfCode(id, token))
	wantErr(t, "ExchangeAuthCode", err, nil)
	return f
}

// familyOfCode is familyFrom for the code's user.
func familyOfCode(id, token string) func(data.AuthCode) (data.Family, error) {
	return func(c data.AuthCode) (data.Family, error) {
		f := newFamily(id, c.ClientID, token)
		f.UserID, f.CodeHash = c.UserID, c.Hash
		return f, nil
	}
}

func testUserFamilies(t *testing.T, s data.Store) {
	exchangedFor(t, s, 1, "f3", "b", "t3")
	exchangedFor(t, s, 1, "f1", "a", "t1")
	exchangedFor(t, s, 1, "f2", "a", "t2")
	exchangedFor(t, s, 2, "f4", "a", "t4")
	// A client ID that begins with another must not mix with it.
	exchangedFor(t, s, 1, "f5", "ab", "t5")
	got, err := s.ListUserFamilies(ctx, 1)
	wantErr(t, "ListUserFamilies(1)", err, nil)
	mustEqual(t, "ListUserFamilies(1)", familyIDs(got), []string{"f1", "f2", "f5", "f3"})
	got, _ = s.ListUserFamilies(ctx, 2)
	mustEqual(t, "ListUserFamilies(2)", familyIDs(got), []string{"f4"})
	got, _ = s.ListUserFamilies(ctx, 3)
	mustEqual(t, "ListUserFamilies(3)", familyIDs(got), []string{})

	// A rotation is seen (RotatedAt is the family's last use).
	t1 := t0.Add(time.Hour)
	_, err = s.RotateRefreshToken(ctx, "f2", presenting("t2", rotateTo("t2b", t1)))
	wantErr(t, "RotateRefreshToken", err, nil)
	got, _ = s.ListUserFamilies(ctx, 1)
	if !got[1].RotatedAt.Equal(t1) || got[1].Generation != 1 {
		t.Fatalf("ListUserFamilies after a rotation: %+v; want RotatedAt %v, generation 1", got[1], t1)
	}
	// Deletes, reuse and GC leave the index.
	wantErr(t, "DeleteFamily(f1)", s.DeleteFamily(ctx, "f1"), nil)
	_, err = s.RotateRefreshToken(ctx, "f5", presenting("not-t5", rotateTo("x", t1)))
	wantErr(t, "RotateRefreshToken(reuse)", err, data.ErrTokenReused)
	got, _ = s.ListUserFamilies(ctx, 1)
	mustEqual(t, "ListUserFamilies(1) after delete and reuse", familyIDs(got), []string{"f2", "f3"})
	// f3 idles out at t0+24h; f2 was rotated to t1+24h.
	if _, err := s.GarbageCollect(ctx, t0.Add(24*time.Hour+time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, _ = s.ListUserFamilies(ctx, 1)
	mustEqual(t, "ListUserFamilies(1) after GC", familyIDs(got), []string{"f2"})
}

func testRevokeApp(t *testing.T, s data.Store) {
	a1 := exchangedFor(t, s, 1, "fa1", "a", "ta1")
	exchangedFor(t, s, 1, "fa2", "a", "ta2")
	exchangedFor(t, s, 1, "fb", "b", "tb")
	exchangedFor(t, s, 2, "f2a", "a", "t2a")
	unused := newCode("oauthd_ac_unused", "a")
	wantErr(t, "CreateAuthCode(unused)", s.CreateAuthCode(ctx, unused), nil)
	otherUser := newCode("oauthd_ac_other_user", "a")
	otherUser.UserID = 2
	wantErr(t, "CreateAuthCode(other user)", s.CreateAuthCode(ctx, otherUser), nil)
	otherClient := newCode("oauthd_ac_other_client", "b")
	wantErr(t, "CreateAuthCode(other client)", s.CreateAuthCode(ctx, otherClient), nil)
	for _, g := range []data.Grant{
		{UserID: 1, ClientID: "a", Scopes: []string{"BOOKING_READ"}, CreatedAt: t0, UpdatedAt: t0},
		{UserID: 1, ClientID: "b", Scopes: []string{"BOOKING_READ"}, CreatedAt: t0, UpdatedAt: t0},
		{UserID: 2, ClientID: "a", Scopes: []string{"BOOKING_READ"}, CreatedAt: t0, UpdatedAt: t0},
	} {
		wantErr(t, "PutGrant", s.PutGrant(ctx, g), nil)
	}

	r, err := s.RevokeApp(ctx, 1, "a")
	wantErr(t, "RevokeApp(1, a)", err, nil)
	// Codes: the two used ones (tombstones of fa1, fa2) and the unused one.
	mustEqual(t, "RevokeApp(1, a)", r, data.AppRevocation{Families: []string{"fa1", "fa2"}, Grant: true, Codes: 3})
	for _, id := range []string{"fa1", "fa2"} {
		_, err := s.GetFamily(ctx, id)
		wantErr(t, "GetFamily("+id+") after RevokeApp", err, data.ErrNotFound)
	}
	_, err = s.RotateRefreshToken(ctx, "fa1", presenting("ta1", rotateTo("x", t0)))
	wantErr(t, "RotateRefreshToken after RevokeApp", err, data.ErrNotFound)
	_, _, err = s.ExchangeAuthCode(ctx, unused.Hash, familyFrom("fa3", "ta3"))
	wantErr(t, "ExchangeAuthCode(a code issued before) after RevokeApp", err, data.ErrNotFound)
	_, err = s.GetGrant(ctx, 1, "a")
	wantErr(t, "GetGrant(1, a) after RevokeApp", err, data.ErrNotFound)
	// Each family left its tombstone (the revoked-grants feed).
	revs, err := s.ListRevoked(ctx, t0.Add(-time.Hour))
	wantErr(t, "ListRevoked", err, nil)
	var got []string
	for _, rv := range revs {
		got = append(got, rv.GrantID)
		if rv.GrantID == a1.ID && (rv.ClientID != "a" || !rv.LastIssuedAt.Equal(a1.RotatedAt)) {
			t.Fatalf("tombstone of %s = %+v; want client a, last issued %v", a1.ID, rv, a1.RotatedAt)
		}
	}
	mustEqual(t, "ListRevoked after RevokeApp", got, []string{"fa1", "fa2"})
	// What is not the pair's stays.
	fams, _ := s.ListUserFamilies(ctx, 1)
	mustEqual(t, "ListUserFamilies(1) after RevokeApp", familyIDs(fams), []string{"fb"})
	fams, _ = s.ListUserFamilies(ctx, 2)
	mustEqual(t, "ListUserFamilies(2) after RevokeApp", familyIDs(fams), []string{"f2a"})
	for _, k := range []struct {
		u int64
		c string
	}{{1, "b"}, {2, "a"}} {
		_, err := s.GetGrant(ctx, k.u, k.c)
		wantErr(t, fmt.Sprintf("GetGrant(%d, %s)", k.u, k.c), err, nil)
	}
	_, _, err = s.ExchangeAuthCode(ctx, otherUser.Hash, familyOfCode("fx", "tx"))
	wantErr(t, "ExchangeAuthCode(other user's code)", err, nil)
	_, _, err = s.ExchangeAuthCode(ctx, otherClient.Hash, familyFrom("fy", "ty"))
	wantErr(t, "ExchangeAuthCode(other client's code)", err, nil)

	// Idempotent: nothing left is not an error.
	r, err = s.RevokeApp(ctx, 1, "a")
	wantErr(t, "RevokeApp(1, a) again", err, nil)
	if len(r.Families) != 0 || r.Grant || r.Codes != 0 {
		t.Fatalf("RevokeApp(1, a) again = %+v; want nothing removed", r)
	}
	r, err = s.RevokeApp(ctx, 9, "nobody")
	wantErr(t, "RevokeApp(unknown)", err, nil)
	if len(r.Families) != 0 || r.Grant || r.Codes != 0 {
		t.Fatalf("RevokeApp(unknown) = %+v; want nothing removed", r)
	}
	// A new consent after the removal works as before.
	exchangedFor(t, s, 1, "fa4", "a", "ta4")
	fams, _ = s.ListUserFamilies(ctx, 1)
	mustEqual(t, "ListUserFamilies(1) after a new consent", familyIDs(fams), []string{"fa4", "fb", "fy"})
}

// testRevokeAppRace races RevokeApp with a code exchange and a rotation of
// the same pair: whichever commits first, nothing of the pair survives.
func testRevokeAppRace(t *testing.T, s data.Store) {
	for i := range 20 {
		live := exchangedFor(t, s, 1, fmt.Sprintf("live-%02d", i), "a", "tl")
		code := newCode(fmt.Sprintf("oauthd_ac_race_%02d", i), "a")
		wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
		var wg sync.WaitGroup
		var exErr, rotErr, revErr error
		wg.Add(3)
		go func() {
			defer wg.Done()
			_, _, exErr = s.ExchangeAuthCode(ctx, code.Hash, familyFrom(fmt.Sprintf("new-%02d", i), "tn"))
		}()
		go func() {
			defer wg.Done()
			_, rotErr = s.RotateRefreshToken(ctx, live.ID, presenting("tl", rotateTo("tl2", t0.Add(time.Minute))))
		}()
		go func() {
			defer wg.Done()
			_, revErr = s.RevokeApp(ctx, 1, "a")
		}()
		wg.Wait()
		wantErr(t, "RevokeApp", revErr, nil)
		raceOutcomes(t, "ExchangeAuthCode", []error{exErr}, data.ErrNotFound)
		raceOutcomes(t, "RotateRefreshToken", []error{rotErr}, data.ErrNotFound)
		fams, err := s.ListUserFamilies(ctx, 1)
		wantErr(t, "ListUserFamilies", err, nil)
		if len(fams) != 0 {
			t.Fatalf("round %d: families left after RevokeApp raced an exchange (%v) and a rotation (%v): %v", i, exErr, rotErr, familyIDs(fams))
		}
		all, _ := s.ListFamilies(ctx, "a")
		if slices.ContainsFunc(all, func(f data.Family) bool { return f.UserID == 1 }) {
			t.Fatalf("round %d: ListFamilies(a) still has a family of user 1: %v", i, familyIDs(all))
		}
	}
}
