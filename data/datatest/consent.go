package datatest

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"oauthd/data"
)

// The remembered consent: codes made on its condition, and the client's
// review it is judged against.

// errNoConsent is what the checks below refuse with.
var errNoConsent = errors.New("no consent")

// coveredBy is the issuer's check (issuer/approvals.go, consentCovers):
// the consent, as it holds under the client's review, covers the code.
func coveredBy(code data.AuthCode) func(data.Client, data.Grant, bool) error {
	return func(c data.Client, g data.Grant, found bool) error {
		held, ok := data.ConsentHeld(g, c)
		if !found || !ok {
			return errNoConsent
		}
		for _, s := range code.Scopes {
			if !slices.Contains(held, s) {
				return errNoConsent
			}
		}
		return nil
	}
}

// approvedClient creates client id, approved.
func approvedClient(t *testing.T, s data.Store, id string) data.Client {
	t.Helper()
	wantErr(t, "CreateClient", s.CreateClient(ctx, newClient(id)), nil)
	c, err := s.UpdateClient(ctx, id, func(c data.Client) (data.Client, error) {
		c.Status = data.StatusApproved
		return c, nil
	})
	wantErr(t, "UpdateClient(approve)", err, nil)
	return c
}

func testConsentedCode(t *testing.T, s data.Store) {
	u, err := s.CreateUser(ctx, data.User{Email: "c@example.com", CreatedAt: t0})
	wantErr(t, "CreateUser", err, nil)
	c := approvedClient(t, s, "cc")
	code := newCode("oauthd_ac_consented", "cc")
	code.UserID = u.ID

	// No grant: check sees none and its error is returned as is.
	var sawFound, sawClient = true, ""
	err = s.CreateConsentedCode(ctx, code, func(cl data.Client, g data.Grant, found bool) error {
		sawFound, sawClient = found, cl.ID
		return coveredBy(code)(cl, g, found)
	})
	wantErr(t, "CreateConsentedCode without a grant", err, errNoConsent)
	if sawFound || sawClient != "cc" {
		t.Fatalf("check saw found=%v client %q; want false and the client cc", sawFound, sawClient)
	}
	_, _, err = s.ExchangeAuthCode(ctx, code.Hash, familyOfCode("fc0", "t"))
	wantErr(t, "ExchangeAuthCode of a refused code", err, data.ErrNotFound)

	// A consent written under the client's review: the code is made.
	g := data.ConsentTo(data.Grant{}, false, c, u.ID, []string{"BOOKING_READ"}, t0)
	wantErr(t, "PutGrant", s.PutGrant(ctx, g), nil)
	wantErr(t, "CreateConsentedCode", s.CreateConsentedCode(ctx, code, coveredBy(code)), nil)
	wantErr(t, "CreateConsentedCode again", s.CreateConsentedCode(ctx, code, coveredBy(code)), data.ErrExists)
	_, f, err := s.ExchangeAuthCode(ctx, code.Hash, familyOfCode("fc1", "t"))
	wantErr(t, "ExchangeAuthCode", err, nil)
	if f.UserID != u.ID {
		t.Fatalf("family of the consented code: user %d; want %d", f.UserID, u.ID)
	}

	// A client that is not there: ErrNotFound, check not called.
	gone := newCode("oauthd_ac_gone", "no-such-client")
	err = s.CreateConsentedCode(ctx, gone, func(data.Client, data.Grant, bool) error {
		t.Fatal("check called for a missing client")
		return nil
	})
	wantErr(t, "CreateConsentedCode(missing client)", err, data.ErrNotFound)

	// A disabled user: ErrUserDisabled, nothing made.
	_, err = s.UpdateUser(ctx, u.ID, func(u data.User) (data.User, error) {
		u.Disabled, u.DisabledAt = true, t0
		return u, nil
	})
	wantErr(t, "UpdateUser(disable)", err, nil)
	late := newCode("oauthd_ac_disabled", "cc")
	late.UserID = u.ID
	err = s.CreateConsentedCode(ctx, late, func(data.Client, data.Grant, bool) error { return nil })
	wantErr(t, "CreateConsentedCode(disabled user)", err, data.ErrUserDisabled)
}

// testClientReview: every store keeps the client's review (data.Reviewed)
// in UpdateClient, so that a consent is judged against it: narrowed with
// the client, void after a rejection, whatever the update callback says.
func testClientReview(t *testing.T, s data.Store) {
	c := approvedClient(t, s, "rv")
	if c.Review.Gen == 0 || c.Review.Approved != c.Review.Gen {
		t.Fatalf("approved client's review = %+v; want Gen > 0 and Approved = Gen", c.Review)
	}
	g := data.ConsentTo(data.Grant{}, false, c, 1, []string{"BOOKING_READ", "PROFILE_READ"}, t0)
	setScopes := func(scopes ...string) data.Client {
		t.Helper()
		c, err := s.UpdateClient(ctx, "rv", func(c data.Client) (data.Client, error) {
			c.Scopes = scopes
			c.Review = data.ClientReview{} // ignored: the store keeps it
			return c, nil
		})
		wantErr(t, "UpdateClient(scopes)", err, nil)
		return c
	}
	held := func(c data.Client) []string {
		got, ok := data.ConsentHeld(g, c)
		if !ok {
			return []string{"(void)"}
		}
		return got
	}
	mustEqual(t, "held before any change", held(c), []string{"BOOKING_READ", "PROFILE_READ"})
	c = setScopes("PROFILE_READ")
	mustEqual(t, "held after BOOKING_READ is taken away", held(c), []string{"PROFILE_READ"})
	c = setScopes("PROFILE_READ", "BOOKING_READ")
	mustEqual(t, "held after BOOKING_READ is given back", held(c), []string{"PROFILE_READ"})
	// A consent written now (merging what holds) holds for what it names.
	g2 := data.ConsentTo(g, true, c, 1, []string{"BOOKING_READ"}, t0)
	if got, _ := data.ConsentHeld(g2, c); !slices.Equal(got, []string{"PROFILE_READ", "BOOKING_READ"}) {
		t.Fatalf("held of a new consent = %v; want PROFILE_READ BOOKING_READ", got)
	}
	// An update that changes neither status nor scopes keeps the review.
	before := c.Review
	c, err := s.UpdateClient(ctx, "rv", func(c data.Client) (data.Client, error) {
		c.Name = "Renamed"
		return c, nil
	})
	wantErr(t, "UpdateClient(name)", err, nil)
	mustEqual(t, "review after a rename", c.Review, before)
	// Rejected, then approved again: no earlier consent holds.
	for _, st := range []data.ClientStatus{data.StatusRejected, data.StatusApproved} {
		c, err = s.UpdateClient(ctx, "rv", func(c data.Client) (data.Client, error) {
			c.Status, c.RejectReason = st, ""
			if st == data.StatusRejected {
				c.RejectReason = "spam"
			}
			return c, nil
		})
		wantErr(t, "UpdateClient(status)", err, nil)
	}
	if _, ok := data.ConsentHeld(g2, c); ok {
		t.Fatalf("a consent from before the rejection holds after the approval (review %+v, grant %d)", c.Review, g2.Review)
	}
	got, err := s.GetClient(ctx, "rv")
	wantErr(t, "GetClient", err, nil)
	mustEqual(t, "GetClient's review", got.Review, c.Review)
}

// testConsentedCodeRace races a silent approval (CreateConsentedCode on a
// remembered consent) with RevokeApp of the same pair, each starting first
// in turn: whichever commits first, neither the code nor the consent is
// left.
func testConsentedCodeRace(t *testing.T, s data.Store) {
	u, err := s.CreateUser(ctx, data.User{Email: "race@example.com", CreatedAt: t0})
	wantErr(t, "CreateUser", err, nil)
	c := approvedClient(t, s, "race")
	made := 0
	for i := range 60 {
		g := data.ConsentTo(data.Grant{}, false, c, u.ID, []string{"BOOKING_READ"}, t0)
		wantErr(t, "PutGrant", s.PutGrant(ctx, g), nil)
		code := newCode(fmt.Sprintf("oauthd_ac_consent_race_%02d", i), "race")
		code.UserID = u.ID
		var wg sync.WaitGroup
		var apErr, revErr error
		approve := func() { defer wg.Done(); apErr = s.CreateConsentedCode(ctx, code, coveredBy(code)) }
		revoke := func() { defer wg.Done(); _, revErr = s.RevokeApp(ctx, u.ID, "race") }
		wg.Add(2)
		if i%2 == 0 {
			go approve()
			runtime.Gosched()
			go revoke()
		} else {
			go revoke()
			runtime.Gosched()
			go approve()
		}
		wg.Wait()
		wantErr(t, "RevokeApp", revErr, nil)
		made += raceOutcomes(t, "CreateConsentedCode", []error{apErr}, errNoConsent)
		_, _, err := s.ExchangeAuthCode(ctx, code.Hash, familyOfCode(fmt.Sprintf("fr-%02d", i), "t"))
		if !errors.Is(err, data.ErrNotFound) {
			t.Fatalf("round %d: the approval's code (approval: %v) survived the removal: exchange = %v", i, apErr, err)
		}
		if _, err := s.GetGrant(ctx, u.ID, "race"); !errors.Is(err, data.ErrNotFound) {
			t.Fatalf("round %d: the consent survived the removal: %v", i, err)
		}
	}
	t.Logf("%d of 60 approvals committed before the removal (and were removed with it)", made)
}
