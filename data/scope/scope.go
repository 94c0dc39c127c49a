// Package scope is the one scope model of oauthd: the 30 scopes of the
// scheduling API and the 3 OpenID Connect scopes (openid, profile, email;
// lower case, as OpenID Connect Core §5.4 names them) with their
// plain-language descriptions and levels, the
// parsing of scope lists as they arrive in authorization requests, and the
// single implication rule: an ORG_ scope implies the TEAM_ scope of the same
// suffix, and nothing else implies anything.
//
// It is a leaf package with no dependencies inside oauthd, so that storage,
// the issuer, the consent pages and the resource-server guard all agree.
package scope

import (
	"fmt"
	"slices"
	"strings"
)

// Level groups scopes for display and for the implication rule.
type Level int

// The levels of the seed's three scope tables.
const (
	User Level = iota + 1
	Team
	Organization
	// Identity is OpenID Connect's: who the user is (the ID token and
	// userinfo), not the scheduling API.
	Identity
)

// The OpenID Connect scopes (OpenID Connect Core §3.1.2.1, §5.4).
const (
	OpenID  = "openid"
	Profile = "profile"
	Email   = "email"
)

// String returns the level's lower-case name.
func (l Level) String() string {
	switch l {
	case User:
		return "user"
	case Team:
		return "team"
	case Organization:
		return "organization"
	case Identity:
		return "identity"
	}
	return "unknown"
}

// Scope describes one scope.
type Scope struct {
	Name        string
	Level       Level
	Description string
}

// All lists every scope in display order: identity, user, team,
// organization.
var all = []Scope{
	{OpenID, Identity, "Sign you in: learn which account on the platform is yours (its ID, never your password)."},
	{Profile, Identity, "See your name, username and time zone."},
	{Email, Identity, "See your email address."},
	{"EVENT_TYPE_READ", User, "List and view your event types, their private links and webhooks."},
	{"EVENT_TYPE_WRITE", User, "Create, update and delete your event types; manage their private links and webhooks."},
	{"BOOKING_READ", User, "List your bookings; view attendees, recordings, transcripts, calendar links and references."},
	{"BOOKING_WRITE", User, "Add guests and attendees, update locations, confirm, decline and reassign your bookings."},
	{"SCHEDULE_READ", User, "List and view your schedules and out-of-office entries."},
	{"SCHEDULE_WRITE", User, "Create, update and delete your schedules and out-of-office entries."},
	{"APPS_READ", User, "List your connected calendars and conferencing apps; check busy times, ICS feeds and calendar connections."},
	{"APPS_WRITE", User, "Save ICS feeds; connect calendars and conferencing apps; manage selected and destination calendars; save calendar credentials; disconnect calendars."},
	{"PROFILE_READ", User, "View your profile."},
	{"PROFILE_WRITE", User, "Update your profile."},
	{"TEAM_EVENT_TYPE_READ", Team, "View team event types, their webhooks and private links."},
	{"TEAM_EVENT_TYPE_WRITE", Team, "Create, edit and delete team event types, their webhooks and private links."},
	{"TEAM_BOOKING_READ", Team, "View team bookings."},
	{"TEAM_BOOKING_WRITE", Team, "Create, edit and delete team bookings."},
	{"TEAM_SCHEDULE_READ", Team, "View team schedules and out-of-office entries."},
	{"TEAM_SCHEDULE_WRITE", Team, "Create, edit and delete team schedules and out-of-office entries."},
	{"TEAM_PROFILE_READ", Team, "View team profiles."},
	{"TEAM_PROFILE_WRITE", Team, "Create, edit and delete teams."},
	{"TEAM_MEMBERSHIP_READ", Team, "View team memberships."},
	{"TEAM_MEMBERSHIP_WRITE", Team, "Create, edit and delete team memberships."},
	{"ORG_EVENT_TYPE_READ", Organization, "View all event types of the organization."},
	{"ORG_EVENT_TYPE_WRITE", Organization, "Create, edit and delete event types of the organization."},
	{"ORG_BOOKING_READ", Organization, "View all bookings of the organization."},
	{"ORG_BOOKING_WRITE", Organization, "Create, edit and delete bookings of the organization."},
	{"ORG_SCHEDULE_READ", Organization, "View schedules and out-of-office entries of the organization."},
	{"ORG_SCHEDULE_WRITE", Organization, "Create, edit and delete schedules and out-of-office entries of the organization."},
	{"ORG_PROFILE_READ", Organization, "View the teams of the organization."},
	{"ORG_PROFILE_WRITE", Organization, "Create, edit and delete the teams of the organization."},
	{"ORG_MEMBERSHIP_READ", Organization, "View memberships and users of the organization."},
	{"ORG_MEMBERSHIP_WRITE", Organization, "Create, edit and delete memberships and users of the organization."},
}

var byName = func() map[string]Scope {
	m := make(map[string]Scope, len(all))
	for _, s := range all {
		m[s.Name] = s
	}
	return m
}()

// All returns every scope in display order (identity, user, team, organization).
// The slice is a copy.
func All() []Scope { return slices.Clone(all) }

// Known reports whether name is one of the 33 scopes.
func Known(name string) bool {
	_, ok := byName[name]
	return ok
}

// UnknownError names the scope names that are not scopes.
type UnknownError struct{ Names []string }

func (e *UnknownError) Error() string {
	return fmt.Sprintf("unknown scope %s", strings.Join(e.Names, ", "))
}

// Parse splits a scope list as it arrives in an authorization request or on
// the command line: names separated by spaces, '+' or commas (in any mix).
// Empty items are skipped and duplicates folded; the order of first
// appearance is kept. Unknown names are reported together in an
// *[UnknownError], alongside the known names.
func Parse(s string) ([]string, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool {
		return r == ' ' || r == '+' || r == ',' || r == '\t' || r == '\n' || r == '\r'
	})
	out := make([]string, 0, len(fields))
	var unknown []string
	for _, f := range fields {
		if !Known(f) {
			if !slices.Contains(unknown, f) {
				unknown = append(unknown, f)
			}
			continue
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	if len(unknown) > 0 {
		return out, &UnknownError{Names: unknown}
	}
	return out, nil
}

// Implies reports whether holding granted is enough for an endpoint that
// requires required: equal names, or an ORG_ scope for the TEAM_ scope of
// the same suffix. WRITE does not imply READ; TEAM does not imply ORG;
// neither implies a user-level scope.
func Implies(granted, required string) bool {
	if granted == required {
		return true
	}
	suffix, ok := strings.CutPrefix(required, "TEAM_")
	if !ok {
		return false
	}
	g, ok := strings.CutPrefix(granted, "ORG_")
	return ok && g == suffix
}

// Covers reports whether the granted scopes cover every required scope
// (all-of), applying [Implies]. It returns the first required scope that is
// not covered.
func Covers(granted, required []string) (missing string, ok bool) {
	for _, r := range required {
		found := false
		for _, g := range granted {
			if Implies(g, r) {
				found = true
				break
			}
		}
		if !found {
			return r, false
		}
	}
	return "", true
}

// Subset reports whether every name in requested is in allowed (exact names:
// a client's registered scopes are a plain set, no implication applies). It
// returns the names that are not.
func Subset(requested, allowed []string) (outside []string, ok bool) {
	for _, r := range requested {
		if !slices.Contains(allowed, r) {
			outside = append(outside, r)
		}
	}
	return outside, len(outside) == 0
}

// Join returns the scopes separated by single spaces, the wire form of
// RFC 6749 §3.3.
func Join(scopes []string) string { return strings.Join(scopes, " ") }

// maxSuggestions bounds what [Suggest] returns.
const maxSuggestions = 3

// Suggest returns up to three scopes close to name, the closest first, for
// "did you mean" in an unknown-scope error: the same name in upper case
// (with '-' for '_'), a name at most two edits away, or a name that name
// begins (ORG_PROFILE → ORG_PROFILE_READ, ORG_PROFILE_WRITE).
func Suggest(name string) []string {
	n := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(name), "-", "_"))
	if n == "" || len(n) > 64 {
		return nil
	}
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	for _, s := range all {
		d := editDistance(n, s.Name)
		switch {
		case d <= 2:
		case len(n) >= 4 && strings.HasPrefix(s.Name, n):
			d = 3 // after the near misses
		default:
			continue
		}
		cs = append(cs, cand{s.Name, d})
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	var out []string
	for _, c := range cs[:min(len(cs), maxSuggestions)] {
		out = append(out, c.name)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b (bytes; scope
// names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
