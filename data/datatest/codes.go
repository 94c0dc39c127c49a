package datatest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"oauthd/data"
)

// Authorization codes.

func testAuthCodeSingleUse(t *testing.T, s data.Store) {
	code := newCode("oauthd_ac_one", "a")
	wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
	wantErr(t, "CreateAuthCode again", s.CreateAuthCode(ctx, code), data.ErrExists)
	noHash := code
	noHash.Hash = nil
	wantRule(t, "CreateAuthCode without a hash", s.CreateAuthCode(ctx, noHash), "hash")
	wantRule(t, "CreateConsentedCode without a hash", s.CreateConsentedCode(ctx, noHash, func(data.Client, data.Grant, bool) error { return nil }), "hash")

	var seen data.AuthCode
	gotCode, fam, err := s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
		seen = c
		return familyFrom("fam1", "rt1")(c)
	})
	wantErr(t, "ExchangeAuthCode", err, nil)
	mustEqual(t, "code seen by exchange", seen, code)
	if !gotCode.Used || gotCode.FamilyID != "fam1" || fam.ID != "fam1" {
		t.Fatalf("ExchangeAuthCode = %+v, %+v; want a used code naming fam1", gotCode, fam)
	}
	stored, err := s.GetFamily(ctx, "fam1")
	wantErr(t, "GetFamily", err, nil)
	mustEqual(t, "stored family", stored, fam)

	called := false
	again, _, err := s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
		called = true
		return familyFrom("fam2", "rt2")(c)
	})
	wantErr(t, "second ExchangeAuthCode", err, data.ErrCodeUsed)
	if called {
		t.Fatal("second ExchangeAuthCode called exchange")
	}
	if again.FamilyID != "fam1" || !again.Used {
		t.Fatalf("second ExchangeAuthCode code = %+v; want FamilyID fam1", again)
	}
	_, err = s.GetFamily(ctx, "fam2")
	wantErr(t, "GetFamily(fam2)", err, data.ErrNotFound)

	_, _, err = s.ExchangeAuthCode(ctx, data.Hash("oauthd_ac_unknown"), familyFrom("fam3", "rt3"))
	wantErr(t, "ExchangeAuthCode(unknown)", err, data.ErrNotFound)

	// A family ID that exists already is refused, and the code stays unused.
	other := newCode("oauthd_ac_two", "a")
	wantErr(t, "CreateAuthCode(two)", s.CreateAuthCode(ctx, other), nil)
	_, _, err = s.ExchangeAuthCode(ctx, other.Hash, familyFrom("fam1", "rt4"))
	wantErr(t, "ExchangeAuthCode onto an existing family", err, data.ErrExists)
	_, _, err = s.ExchangeAuthCode(ctx, other.Hash, familyFrom("fam4", "rt4"))
	wantErr(t, "ExchangeAuthCode(two) after the refusal", err, nil)
}

func testAuthCodeExchangeError(t *testing.T, s data.Store) {
	code := newCode("oauthd_ac_one", "a")
	wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
	boom := errors.New("invalid_grant: redirect_uri mismatch")
	_, _, err := s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
		c.Scopes[0] = "ORG_BOOKING_WRITE" // mutates its copy, then fails
		return data.Family{ID: "fam1"}, boom
	})
	wantErr(t, "ExchangeAuthCode", err, boom)
	if _, err := s.GetFamily(ctx, "fam1"); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("GetFamily after a failed exchange: %v; want ErrNotFound", err)
	}
	// The code is still unused and unchanged: the next exchange sees it as created.
	_, _, err = s.ExchangeAuthCode(ctx, code.Hash, func(c data.AuthCode) (data.Family, error) {
		mustEqual(t, "code after a failed exchange", c, code)
		return familyFrom("fam2", "rt")(c)
	})
	wantErr(t, "ExchangeAuthCode after a failed one", err, nil)
}

func testAuthCodeConcurrent(t *testing.T, s data.Store) {
	code := newCode("oauthd_ac_race", "a")
	wantErr(t, "CreateAuthCode", s.CreateAuthCode(ctx, code), nil)
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, _, errs[i] = s.ExchangeAuthCode(ctx, code.Hash, familyFrom(fmt.Sprintf("fam%d", i), "rt"))
		})
	}
	wg.Wait()
	ok := raceOutcomes(t, "ExchangeAuthCode", errs, data.ErrCodeUsed)
	fams, err := s.ListFamilies(ctx, "")
	wantErr(t, "ListFamilies", err, nil)
	if ok != 1 || len(fams) != 1 {
		t.Fatalf("%d exchanges succeeded, %d families stored; want 1 and 1", ok, len(fams))
	}
}
