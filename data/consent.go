package data

import (
	"slices"
	"time"
)

// The remembered consent (a [Grant]) is a decision that holds only while
// what it approved holds: the client as reviewed when the user consented.
// This file is the one rule, read by every path that trusts a consent
// (prompt=none in issuer.Interact and the code it makes, the consent a
// new decision merges with, the Connected apps page), and the one place
// that keeps the client's side of it ([Reviewed], called by every store's
// UpdateClient in the update's transaction).

// ClientReview is what the stores keep of a client's reviews, so that a
// consent can be judged against the client's current one ([ConsentHeld]).
// Only [Reviewed] changes it.
type ClientReview struct {
	// Gen counts the changes of what the client is approved for: its
	// approval or rejection, a scope added or removed, the migration of a
	// legacy client to scopes. 0 for a client not changed since reviews
	// were recorded.
	Gen uint64 `json:"gen,omitempty"`
	// Approved is Gen when the client was last approved (from pending or
	// rejected): a consent written before it was given to a client that
	// has since been rejected, and does not hold.
	Approved uint64 `json:"approved,omitempty"`
	// Scopes are, for each scope of the client added since reviews were
	// recorded, Gen when it was (last) added: a consent written before it
	// was given before the scope was taken away and given back, and does
	// not hold for it. A scope not listed is 0.
	Scopes []ScopeAdded `json:"scopes,omitempty"`
}

// ScopeAdded is when (the [ClientReview.Gen]) a scope was added to a client.
type ScopeAdded struct {
	Scope string `json:"scope"`
	Gen   uint64 `json:"gen"`
}

// Clone returns a deep copy of r.
func (r ClientReview) Clone() ClientReview {
	r.Scopes = slices.Clone(r.Scopes)
	return r
}

// added returns Gen when scope s was last added (0: before reviews).
func (r ClientReview) added(s string) uint64 {
	for _, a := range r.Scopes {
		if a.Scope == s {
			return a.Gen
		}
	}
	return 0
}

// Reviewed returns next (the client old becomes) with its [Client.Review]
// following the change from old: one more Gen when the status or the scope
// list changed (a scope added or removed; the legacy client's migration adds
// every scope), Approved set when the client becomes approved, and each
// scope added stamped with the new Gen (a scope removed is forgotten). What
// next itself carries in Review is ignored. Every store's UpdateClient
// calls it in the update's transaction, so that no writer can skip it.
func Reviewed(old, next Client) Client {
	r := old.Review.Clone()
	bumped := false
	bump := func() {
		if !bumped {
			r.Gen++
			bumped = true
		}
	}
	if next.Status != old.Status {
		bump()
		if next.Status == StatusApproved {
			r.Approved = r.Gen
		}
	}
	var added []string
	for _, s := range next.Scopes {
		if (old.Legacy && !next.Legacy) || !slices.Contains(old.Scopes, s) {
			added = append(added, s)
		}
	}
	r.Scopes = slices.DeleteFunc(r.Scopes, func(a ScopeAdded) bool {
		return !slices.Contains(next.Scopes, a.Scope) || slices.Contains(added, a.Scope)
	})
	for _, s := range old.Scopes {
		if !slices.Contains(next.Scopes, s) {
			bump()
		}
	}
	if len(added) > 0 {
		bump()
		for _, s := range added {
			r.Scopes = append(r.Scopes, ScopeAdded{Scope: s, Gen: r.Gen})
		}
	}
	if len(r.Scopes) == 0 {
		r.Scopes = nil
	}
	next.Review = r
	return next
}

// ConsentHeld returns the scopes of the user's consent g that still hold
// for the client c under c's current review, in g's order, and whether the
// consent holds at all. It does not (false) when c is not approved, was
// approved again (after a rejection) since g was written, or was made
// after g (a client ID used again), or when g was stored by a release
// that kept no reviews (not [Grant.Stamped]: what happened to the client
// since cannot be told). Of a scoped client, a scope holds when the client has it now and
// has had it without a break since g was written: a scope the operator
// took from the client and gave back needs the user's consent again, as it
// does for the refresh-token families (issuer/refresh.go). Of a legacy
// client (no scope list), all of g's scopes hold.
func ConsentHeld(g Grant, c Client) ([]string, bool) {
	if !g.Stamped || c.Status != StatusApproved || g.Review < c.Review.Approved || g.CreatedAt.Before(c.CreatedAt) {
		return nil, false
	}
	var out []string
	for _, s := range g.Scopes {
		if c.Legacy || (slices.Contains(c.Scopes, s) && c.Review.added(s) <= g.Review) {
			out = append(out, s)
		}
	}
	return out, true
}

// ConsentTo returns the grant that records the user's consent to scopes of
// the client c at now, given the grant g stored before (found false: none):
// the scopes of g that still hold ([ConsentHeld]) and scopes, stamped with
// c's current review. It is what every consent writes, so that a scope
// that no longer holds is not carried into a new consent.
func ConsentTo(g Grant, found bool, c Client, userID int64, scopes []string, now time.Time) Grant {
	var held []string
	live := false
	if found {
		held, live = ConsentHeld(g, c)
	}
	if !live {
		g = Grant{UserID: userID, ClientID: c.ID, CreatedAt: now}
	}
	g.Scopes = slices.Clone(held)
	for _, s := range scopes {
		if !slices.Contains(g.Scopes, s) {
			g.Scopes = append(g.Scopes, s)
		}
	}
	g.UpdatedAt = now
	g.Review = c.Review.Gen
	g.Stamped = true
	return g
}
