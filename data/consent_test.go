package data_test

import (
	"slices"
	"testing"
	"time"

	"oauthd/data"
)

// TestConsentStoredBeforeReviewsHoldsNothing: a consent of a release that
// recorded no reviews (not Stamped) holds nothing, since whether its client
// was rejected or narrowed since cannot be told; the same consent written
// by ConsentTo holds, and a new consent replaces the old one whole.
func TestConsentStoredBeforeReviewsHoldsNothing(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := data.Client{ID: "app", Status: data.StatusApproved, Scopes: []string{"BOOKING_READ", "PROFILE_READ"}, CreatedAt: t0}
	old := data.Grant{UserID: 1, ClientID: "app", Scopes: []string{"BOOKING_READ"}, CreatedAt: t0.Add(time.Hour), UpdatedAt: t0.Add(time.Hour)}
	if held, ok := data.ConsentHeld(old, c); ok || held != nil {
		t.Errorf("ConsentHeld(unstamped) = %v, %v; want nothing", held, ok)
	}
	g := data.ConsentTo(old, true, c, 1, []string{"PROFILE_READ"}, t0.Add(2*time.Hour))
	if !g.Stamped {
		t.Fatal("ConsentTo wrote an unstamped consent")
	}
	if !slices.Equal(g.Scopes, []string{"PROFILE_READ"}) || !g.CreatedAt.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("ConsentTo over an unstamped consent = %+v; want only the new scope, created now", g)
	}
	if held, ok := data.ConsentHeld(g, c); !ok || !slices.Equal(held, []string{"PROFILE_READ"}) {
		t.Errorf("ConsentHeld(stamped) = %v, %v; want [PROFILE_READ]", held, ok)
	}
}
