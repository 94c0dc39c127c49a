package datatest

import (
	"errors"
	"fmt"
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
	got, err := s.RotateRefreshToken(ctx, "fam", data.Hash("rt0"), rotateTo("rt1", t1))
	wantErr(t, "RotateRefreshToken", err, nil)
	if !data.Equal(got.TokenHash, data.Hash("rt1")) || got.Generation != 1 || !got.RotatedAt.Equal(t1) {
		t.Fatalf("RotateRefreshToken = %+v; want rt1, generation 1", got)
	}
	stored, err := s.GetFamily(ctx, "fam")
	wantErr(t, "GetFamily", err, nil)
	mustEqual(t, "stored family", stored, got)
	got, err = s.RotateRefreshToken(ctx, "fam", data.Hash("rt1"), rotateTo("rt2", t1.Add(time.Hour)))
	wantErr(t, "second RotateRefreshToken", err, nil)
	if got.Generation != 2 {
		t.Fatalf("Generation = %d; want 2", got.Generation)
	}
	_, err = s.RotateRefreshToken(ctx, "nope", data.Hash("rt0"), rotateTo("x", t1))
	wantErr(t, "RotateRefreshToken(unknown)", err, data.ErrNotFound)
}

func testRotateReuse(t *testing.T, s data.Store) {
	exchanged(t, s, "fam", "a", "rt0")
	exchanged(t, s, "other", "a", "rtX")
	_, err := s.RotateRefreshToken(ctx, "fam", data.Hash("rt0"), rotateTo("rt1", t0))
	wantErr(t, "RotateRefreshToken", err, nil)
	called := false
	old, err := s.RotateRefreshToken(ctx, "fam", data.Hash("rt0"), func(f data.Family) (data.Family, error) {
		called = true
		return f, nil
	})
	wantErr(t, "RotateRefreshToken(rotated-away token)", err, data.ErrTokenReused)
	if called {
		t.Fatal("a reused token called update")
	}
	if old.ID != "fam" || !data.Equal(old.TokenHash, data.Hash("rt1")) {
		t.Fatalf("RotateRefreshToken returned %+v; want the revoked family", old)
	}
	_, err = s.GetFamily(ctx, "fam")
	wantErr(t, "GetFamily after reuse", err, data.ErrNotFound)
	_, err = s.RotateRefreshToken(ctx, "fam", data.Hash("rt1"), rotateTo("rt2", t0))
	wantErr(t, "RotateRefreshToken with the current token after reuse", err, data.ErrNotFound)
	_, err = s.GetFamily(ctx, "other")
	wantErr(t, "GetFamily(other)", err, nil)
}

func testRotateUpdateError(t *testing.T, s data.Store) {
	orig := exchanged(t, s, "fam", "a", "rt0")
	boom := errors.New("invalid_grant: expired")
	_, err := s.RotateRefreshToken(ctx, "fam", data.Hash("rt0"), func(f data.Family) (data.Family, error) {
		f.TokenHash = data.Hash("rt1")
		f.Scopes[0] = "ORG_BOOKING_WRITE"
		return f, boom
	})
	wantErr(t, "RotateRefreshToken", err, boom)
	got, err := s.GetFamily(ctx, "fam")
	wantErr(t, "GetFamily", err, nil)
	mustEqual(t, "family after a failed rotation", got, orig)
	_, err = s.RotateRefreshToken(ctx, "fam", data.Hash("rt0"), rotateTo("rt1", t0))
	wantErr(t, "RotateRefreshToken after a failed one", err, nil)
}

func testRotateConcurrent(t *testing.T, s data.Store) {
	exchanged(t, s, "fam", "a", "rt0")
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.RotateRefreshToken(ctx, "fam", data.Hash("rt0"), rotateTo(fmt.Sprintf("rt%d", i+1), t0))
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
	_, err = s.RotateRefreshToken(ctx, "f3", data.Hash("wrong"), rotateTo("x", t0))
	wantErr(t, "RotateRefreshToken(wrong)", err, data.ErrTokenReused)
	ofA, _ = s.ListFamilies(ctx, "a")
	if len(ofA) != 0 {
		t.Fatalf("ListFamilies(a) after reuse = %v; want none", ofA)
	}
}
