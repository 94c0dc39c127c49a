package datatest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"oauthd/data"
)

// Refresh-token families.

// exchanged stores a code and exchanges it for family id with token.
func exchanged(t *testing.T, s data.Store, id, clientID, token string) data.Family {
	t.Helper()
	code := newCode("oauthd_ac_"+id, clientID)
	wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
	_, f, err := s.ExchangeAuthCode(ctx, code.Hash, familyFrom(id, token))
	wantErr(t, "ExchangeAuthCode", err, nil)
	return f
}

func testRotate(t *testing.T, s data.Store) {
	exchanged(t, s, "fam", "a", "rt0")
	t1 := t0.Add(time.Hour)
	got, err := s.RotateRefreshToken(ctx, "fam", presenting("rt0", rotateTo("rt1", t1)))
	wantErr(t, "RotateRefreshToken", err, nil)
	if !data.Equal(got.TokenHash, data.Hash("rt1")) || got.Generation != 1 || !got.RotatedAt.Equal(t1) {
		t.Fatalf("RotateRefreshToken = %+v; want rt1, generation 1", got)
	}
	stored, err := s.GetFamily(ctx, "fam")
	wantErr(t, "GetFamily", err, nil)
	mustEqual(t, "stored family", stored, got)
	got, err = s.RotateRefreshToken(ctx, "fam", presenting("rt1", rotateTo("rt2", t1.Add(time.Hour))))
	wantErr(t, "second RotateRefreshToken", err, nil)
	if got.Generation != 2 {
		t.Fatalf("Generation = %d; want 2", got.Generation)
	}
	_, err = s.RotateRefreshToken(ctx, "nope", presenting("rt0", rotateTo("x", t1)))
	wantErr(t, "RotateRefreshToken(unknown)", err, data.ErrNotFound)
}

func testRotateReuse(t *testing.T, s data.Store) {
	exchanged(t, s, "fam", "a", "rt0")
	exchanged(t, s, "other", "a", "rtX")
	_, err := s.RotateRefreshToken(ctx, "fam", presenting("rt0", rotateTo("rt1", t0)))
	wantErr(t, "RotateRefreshToken", err, nil)
	called := false
	old, err := s.RotateRefreshToken(ctx, "fam", presenting("rt0", func(f data.Family) (data.Family, error) {
		called = true
		return f, nil
	}))
	wantErr(t, "RotateRefreshToken(rotated-away token)", err, data.ErrTokenReused)
	if called {
		t.Fatal("a reused token called update")
	}
	if old.ID != "fam" || !data.Equal(old.TokenHash, data.Hash("rt1")) {
		t.Fatalf("RotateRefreshToken returned %+v; want the revoked family", old)
	}
	_, err = s.GetFamily(ctx, "fam")
	wantErr(t, "GetFamily after reuse", err, data.ErrNotFound)
	_, err = s.RotateRefreshToken(ctx, "fam", presenting("rt1", rotateTo("rt2", t0)))
	wantErr(t, "RotateRefreshToken with the current token after reuse", err, data.ErrNotFound)
	_, err = s.GetFamily(ctx, "other")
	wantErr(t, "GetFamily(other)", err, nil)
}

func testRotateUpdateError(t *testing.T, s data.Store) {
	orig := exchanged(t, s, "fam", "a", "rt0")
	boom := errors.New("invalid_grant: expired")
	_, err := s.RotateRefreshToken(ctx, "fam", func(f data.Family) (data.Family, error) {
		f.TokenHash = data.Hash("rt1")
		f.Scopes[0] = "ORG_BOOKING_WRITE"
		return f, boom
	})
	wantErr(t, "RotateRefreshToken", err, boom)
	got, err := s.GetFamily(ctx, "fam")
	wantErr(t, "GetFamily", err, nil)
	mustEqual(t, "family after a failed rotation", got, orig)
	_, err = s.RotateRefreshToken(ctx, "fam", presenting("rt0", rotateTo("rt1", t0)))
	wantErr(t, "RotateRefreshToken after a failed one", err, nil)
}

func testRotateConcurrent(t *testing.T, s data.Store) {
	exchanged(t, s, "fam", "a", "rt0")
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.RotateRefreshToken(ctx, "fam", presenting("rt0", rotateTo(fmt.Sprintf("rt%d", i+1), t0)))
		})
	}
	wg.Wait()
	ok := raceOutcomes(t, "RotateRefreshToken", errs, data.ErrTokenReused, data.ErrNotFound)
	reused := 0
	for _, err := range errs {
		if errors.Is(err, data.ErrTokenReused) {
			reused++
		}
	}
	if ok != 1 || reused < 1 {
		t.Fatalf("%d rotations succeeded, %d saw reuse; want exactly 1 and at least 1", ok, reused)
	}
	_, err := s.GetFamily(ctx, "fam")
	wantErr(t, "GetFamily after the race", err, data.ErrNotFound)
}

// The store makes no decision of its own: an update that returns
// ErrTokenReused (wrapped) has the family deleted, whatever was presented.
func testRotateUpdateDecidesReuse(t *testing.T, s data.Store) {
	orig := exchanged(t, s, "fam", "a", "rt0")
	exchanged(t, s, "other", "a", "rtX")
	reused := fmt.Errorf("replay of generation 0: %w", data.ErrTokenReused)
	var saw data.Family
	got, err := s.RotateRefreshToken(ctx, "fam", func(f data.Family) (data.Family, error) {
		saw = f
		f.Scopes[0] = "ORG_BOOKING_WRITE" // the record returned is the stored one, not this
		return f, reused
	})
	wantErr(t, "RotateRefreshToken", err, data.ErrTokenReused)
	if err.Error() != reused.Error() {
		t.Fatalf("RotateRefreshToken error = %q; want update's %q", err, reused)
	}
	mustEqual(t, "update's argument", saw.ID, orig.ID)
	mustEqual(t, "the revoked family returned", got, orig)
	_, err = s.GetFamily(ctx, "fam")
	wantErr(t, "GetFamily after a revoking update", err, data.ErrNotFound)
	ofA, err := s.ListFamilies(ctx, "a")
	wantErr(t, "ListFamilies(a)", err, nil)
	if len(ofA) != 1 || ofA[0].ID != "other" {
		t.Fatalf("ListFamilies(a) after a revoking update = %+v; want only other", ofA)
	}
	_, err = s.RotateRefreshToken(ctx, "fam", rotateTo("rt1", t0))
	wantErr(t, "RotateRefreshToken after the revocation", err, data.ErrNotFound)
}

// Tagged, PrevHash and LegacyHash are stored by a rotation, read back by
// every read, and cleared again (nil) when the update clears them.
func testRotateGraceFields(t *testing.T, s data.Store) {
	exchanged(t, s, "fam", "a", "rt0")
	got, err := s.RotateRefreshToken(ctx, "fam", func(f data.Family) (data.Family, error) {
		if f.Tagged || f.PrevHash != nil || f.LegacyHash != nil {
			t.Errorf("new family = %+v; want Tagged false, no PrevHash, no LegacyHash", f)
		}
		f.Tagged = true
		f.PrevHash, f.LegacyHash = data.Hash("rt0"), data.Hash("legacy")
		f.TokenHash = data.Hash("rt1")
		f.Scopes = []string{"PROFILE_READ"}
		f.JKT = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
		return f, nil
	})
	wantErr(t, "RotateRefreshToken", err, nil)
	stored, err := s.GetFamily(ctx, "fam")
	wantErr(t, "GetFamily", err, nil)
	mustEqual(t, "stored family", stored, got)
	if !stored.Tagged || !data.Equal(stored.PrevHash, data.Hash("rt0")) || !data.Equal(stored.LegacyHash, data.Hash("legacy")) ||
		!slices.Equal(stored.Scopes, []string{"PROFILE_READ"}) || stored.JKT != "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" {
		t.Fatalf("stored family = %+v; want Tagged, PrevHash rt0, LegacyHash legacy, scopes narrowed, the DPoP binding", stored)
	}
	all, err := s.ListFamilies(ctx, "a")
	wantErr(t, "ListFamilies", err, nil)
	mustEqual(t, "ListFamilies", all, []data.Family{got})
	got, err = s.RotateRefreshToken(ctx, "fam", func(f data.Family) (data.Family, error) {
		mustEqual(t, "update's argument", f, stored)
		f.PrevHash = nil
		f.TokenHash = data.Hash("rt2")
		return f, nil
	})
	wantErr(t, "second RotateRefreshToken", err, nil)
	stored, _ = s.GetFamily(ctx, "fam")
	mustEqual(t, "family after clearing PrevHash", stored, got)
	if stored.PrevHash != nil || !stored.Tagged || stored.LegacyHash == nil {
		t.Fatalf("family after clearing PrevHash = %+v", stored)
	}
}

func testRotateCannotChangeIDs(t *testing.T, s data.Store) {
	orig := exchanged(t, s, "fam", "a", "rt0")
	for name, change := range map[string]func(*data.Family){
		"client": func(f *data.Family) { f.ClientID = "b" },
		"id":     func(f *data.Family) { f.ID = "fam2" },
	} {
		_, err := s.RotateRefreshToken(ctx, "fam", func(f data.Family) (data.Family, error) {
			change(&f)
			f.TokenHash = data.Hash("rt1")
			return f, nil
		})
		wantErr(t, "RotateRefreshToken changing the "+name, err, data.ErrInvalid)
		got, err := s.GetFamily(ctx, "fam")
		wantErr(t, "GetFamily", err, nil)
		mustEqual(t, "family after a refused rotation", got, orig)
	}
}

// testRevocations: every delete of a family before its expiry (DeleteFamily,
// and the delete of a reuse in RotateRefreshToken) leaves a tombstone naming
// the family's last issuance; a failed rotation or a family's expiry leaves
// none; ListRevoked filters by LastIssuedAt; GC removes tombstones older
// than RevocationKeep.
func testRevocations(t *testing.T, s data.Store) {
	none, err := s.ListRevoked(ctx, time.Time{})
	wantErr(t, "ListRevoked on an empty store", err, nil)
	if len(none) != 0 {
		t.Fatalf("ListRevoked on an empty store = %v; want none", none)
	}
	exchanged(t, s, "f1", "a", "t1")
	exchanged(t, s, "f2", "b", "t2")
	exchanged(t, s, "f3", "a", "t3")
	t1 := t0.Add(time.Hour)
	_, err = s.RotateRefreshToken(ctx, "f2", presenting("t2", rotateTo("u2", t1)))
	wantErr(t, "RotateRefreshToken(f2)", err, nil)
	// A refused rotation writes nothing, tombstone included.
	_, err = s.RotateRefreshToken(ctx, "f3", func(data.Family) (data.Family, error) { return data.Family{}, data.ErrConflict })
	wantErr(t, "refused RotateRefreshToken(f3)", err, data.ErrConflict)
	wantErr(t, "DeleteFamily(f1)", s.DeleteFamily(ctx, "f1"), nil)
	_, err = s.RotateRefreshToken(ctx, "f2", presenting("t2", rotateTo("x", t1)))
	wantErr(t, "RotateRefreshToken(f2, reused)", err, data.ErrTokenReused)
	all, err := s.ListRevoked(ctx, time.Time{})
	wantErr(t, "ListRevoked", err, nil)
	mustEqual(t, "ListRevoked(all)", all, []data.Revocation{
		{GrantID: "f1", ClientID: "a", LastIssuedAt: t0},
		{GrantID: "f2", ClientID: "b", LastIssuedAt: t1},
	})
	recent, err := s.ListRevoked(ctx, t0.Add(time.Minute))
	wantErr(t, "ListRevoked(since)", err, nil)
	mustEqual(t, "ListRevoked(t0+1m)", recent, []data.Revocation{{GrantID: "f2", ClientID: "b", LastIssuedAt: t1}})
	// A family that expires is not revoked: GC leaves no tombstone. GC
	// drops f1's tombstone (t0 + keep has passed) and keeps f2's.
	now := t0.Add(data.RevocationKeep + time.Minute)
	got, err := s.GarbageCollect(ctx, now)
	wantErr(t, "GarbageCollect", err, nil)
	if got.Revocations != 1 {
		t.Fatalf("GarbageCollect removed %d revocations; want 1 (%+v)", got.Revocations, got)
	}
	all, err = s.ListRevoked(ctx, time.Time{})
	wantErr(t, "ListRevoked after GC", err, nil)
	mustEqual(t, "ListRevoked after GC", all, []data.Revocation{{GrantID: "f2", ClientID: "b", LastIssuedAt: t1}})
}

func testFamilies(t *testing.T, s data.Store) {
	f1 := exchanged(t, s, "f1", "a", "t1")
	f2 := exchanged(t, s, "f2", "b", "t2")
	f3 := exchanged(t, s, "f3", "a", "t3")
	all, err := s.ListFamilies(ctx, "")
	wantErr(t, "ListFamilies", err, nil)
	mustEqual(t, "ListFamilies(all)", all, []data.Family{f1, f2, f3})
	ofA, err := s.ListFamilies(ctx, "a")
	wantErr(t, "ListFamilies(a)", err, nil)
	mustEqual(t, "ListFamilies(a)", ofA, []data.Family{f1, f3})
	none, err := s.ListFamilies(ctx, "c")
	wantErr(t, "ListFamilies(c)", err, nil)
	if len(none) != 0 {
		t.Fatalf("ListFamilies(c) = %v; want none", none)
	}
	wantErr(t, "DeleteFamily(f1)", s.DeleteFamily(ctx, "f1"), nil)
	wantErr(t, "DeleteFamily(f1) again", s.DeleteFamily(ctx, "f1"), data.ErrNotFound)
	_, err = s.GetFamily(ctx, "f1")
	wantErr(t, "GetFamily(f1)", err, data.ErrNotFound)
	ofA, err = s.ListFamilies(ctx, "a")
	wantErr(t, "ListFamilies(a)", err, nil)
	mustEqual(t, "ListFamilies(a) after delete", ofA, []data.Family{f3})
	// A reuse revocation also leaves the client's list.
	_, err = s.RotateRefreshToken(ctx, "f3", presenting("wrong", rotateTo("x", t0)))
	wantErr(t, "RotateRefreshToken(wrong)", err, data.ErrTokenReused)
	ofA, _ = s.ListFamilies(ctx, "a")
	if len(ofA) != 0 {
		t.Fatalf("ListFamilies(a) after reuse = %v; want none", ofA)
	}
}
