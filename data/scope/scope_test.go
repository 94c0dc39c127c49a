package scope

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestAll(t *testing.T) {
	all := All()
	if len(all) != 33 {
		t.Fatalf("All() has %d scopes; want the seed's 30 and OpenID Connect's 3", len(all))
	}
	levels := map[Level]int{}
	for _, s := range all {
		levels[s.Level]++
		if s.Level == Identity {
			if s.Description == "" || (s.Name != OpenID && s.Name != Profile && s.Name != Email) {
				t.Errorf("scope %+v: want openid, profile or email with a description", s)
			}
			continue
		}
		if s.Description == "" || strings.ToUpper(s.Name) != s.Name {
			t.Errorf("scope %+v: want an upper-case name and a description", s)
		}
		wantLevel := User
		switch {
		case strings.HasPrefix(s.Name, "TEAM_"):
			wantLevel = Team
		case strings.HasPrefix(s.Name, "ORG_"):
			wantLevel = Organization
		}
		if s.Level != wantLevel {
			t.Errorf("%s level = %v; want %v", s.Name, s.Level, wantLevel)
		}
	}
	if levels[User] != 10 || levels[Team] != 10 || levels[Organization] != 10 || levels[Identity] != 3 {
		t.Errorf("levels = %v; want 10 of each", levels)
	}
	all[0].Name = "CHANGED"
	if All()[0].Name == "CHANGED" {
		t.Error("All() returned the package's own slice; want a copy")
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		unknown []string
	}{
		{"empty", "", []string{}, nil},
		{"spaces", "BOOKING_READ PROFILE_READ", []string{"BOOKING_READ", "PROFILE_READ"}, nil},
		{"plus", "BOOKING_READ+PROFILE_READ", []string{"BOOKING_READ", "PROFILE_READ"}, nil},
		{"commas", "BOOKING_READ,PROFILE_READ", []string{"BOOKING_READ", "PROFILE_READ"}, nil},
		{"mixed and repeated separators", " ,BOOKING_READ ,+ PROFILE_READ,, ", []string{"BOOKING_READ", "PROFILE_READ"}, nil},
		{"duplicates folded, first order kept", "PROFILE_READ BOOKING_READ PROFILE_READ", []string{"PROFILE_READ", "BOOKING_READ"}, nil},
		{"unknown named", "BOOKING_READ NOPE booking_read NOPE", []string{"BOOKING_READ"}, []string{"NOPE", "booking_read"}},
		{"only separators", " + , ", []string{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Parse(%q) = %q; want %q", tc.in, got, tc.want)
			}
			var ue *UnknownError
			if tc.unknown == nil {
				if err != nil {
					t.Errorf("Parse(%q) error = %v; want nil", tc.in, err)
				}
				return
			}
			if !errors.As(err, &ue) || !slices.Equal(ue.Names, tc.unknown) {
				t.Fatalf("Parse(%q) error = %v; want UnknownError %q", tc.in, err, tc.unknown)
			}
			for _, n := range tc.unknown {
				if !strings.Contains(err.Error(), n) {
					t.Errorf("error %q does not name %q", err, n)
				}
			}
		})
	}
}

func TestImplies(t *testing.T) {
	tests := []struct {
		granted, required string
		want              bool
	}{
		{"BOOKING_READ", "BOOKING_READ", true},
		{"ORG_PROFILE_READ", "TEAM_PROFILE_READ", true},
		{"ORG_MEMBERSHIP_WRITE", "TEAM_MEMBERSHIP_WRITE", true},
		{"TEAM_PROFILE_READ", "ORG_PROFILE_READ", false},    // TEAM does not imply ORG
		{"ORG_PROFILE_WRITE", "TEAM_PROFILE_READ", false},   // WRITE does not imply READ
		{"BOOKING_WRITE", "BOOKING_READ", false},            // WRITE does not imply READ
		{"ORG_BOOKING_READ", "BOOKING_READ", false},         // no user-level implication
		{"TEAM_BOOKING_READ", "BOOKING_READ", false},        // no user-level implication
		{"ORG_PROFILE_READ", "TEAM_MEMBERSHIP_READ", false}, // same level, other suffix
		{"ORG_", "TEAM_", true},                             // degenerate names still follow the rule
		{"XORG_PROFILE_READ", "TEAM_PROFILE_READ", false},   // a prefix, not a substring
		{"ORG_PROFILE_READ", "XTEAM_PROFILE_READ", false},   // a prefix, not a substring
	}
	for _, tc := range tests {
		if got := Implies(tc.granted, tc.required); got != tc.want {
			t.Errorf("Implies(%q, %q) = %v; want %v", tc.granted, tc.required, got, tc.want)
		}
	}
}

func TestCovers(t *testing.T) {
	tests := []struct {
		name              string
		granted, required []string
		missing           string
		ok                bool
	}{
		{"nothing required", nil, nil, "", true},
		{"all of", []string{"A_READ", "BOOKING_READ"}, []string{"BOOKING_READ"}, "", true},
		{"org twin", []string{"ORG_SCHEDULE_READ"}, []string{"TEAM_SCHEDULE_READ"}, "", true},
		{"second missing", []string{"BOOKING_READ"}, []string{"BOOKING_READ", "BOOKING_WRITE"}, "BOOKING_WRITE", false},
		{"none granted", nil, []string{"PROFILE_READ"}, "PROFILE_READ", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			missing, ok := Covers(tc.granted, tc.required)
			if missing != tc.missing || ok != tc.ok {
				t.Errorf("Covers(%q, %q) = %q, %v; want %q, %v", tc.granted, tc.required, missing, ok, tc.missing, tc.ok)
			}
		})
	}
}

func TestSubset(t *testing.T) {
	outside, ok := Subset([]string{"BOOKING_READ", "TEAM_PROFILE_READ"}, []string{"BOOKING_READ", "ORG_PROFILE_READ"})
	if ok || !slices.Equal(outside, []string{"TEAM_PROFILE_READ"}) {
		t.Errorf("Subset = %q, %v; want TEAM_PROFILE_READ outside (a client's scopes are a plain set)", outside, ok)
	}
	if outside, ok := Subset([]string{"BOOKING_READ"}, []string{"BOOKING_READ"}); !ok || outside != nil {
		t.Errorf("Subset of itself = %q, %v; want nil, true", outside, ok)
	}
}

func TestJoin(t *testing.T) {
	if Organization.String() != "organization" {
		t.Errorf("Organization.String() = %q", Organization.String())
	}
	if got := Join([]string{"A", "B"}); got != "A B" {
		t.Errorf("Join = %q; want single spaces", got)
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		{"PROFILE_RAED", []string{"PROFILE_READ"}},
		{"profile_read", []string{"PROFILE_READ"}},
		{"BOOKINGS_READ", []string{"BOOKING_READ"}},
		{"team-booking-read", []string{"TEAM_BOOKING_READ"}},
		{"ORG_PROFILE", []string{"ORG_PROFILE_READ", "ORG_PROFILE_WRITE"}},
		{"APPS_RAED", []string{"APPS_READ"}},
		{"ADMIN", nil},
		{"", nil},
		{"X", nil},
	}
	for _, tc := range tests {
		if got := Suggest(tc.name); !slices.Equal(got, tc.want) {
			t.Errorf("Suggest(%q) = %v; want %v", tc.name, got, tc.want)
		}
	}
	if got := Suggest("EVENT_TYPE_RED"); len(got) == 0 || got[0] != "EVENT_TYPE_READ" || len(got) > maxSuggestions {
		t.Errorf("Suggest(EVENT_TYPE_RED) = %v; want EVENT_TYPE_READ first, at most %d", got, maxSuggestions)
	}
}
