package settings

import (
	"net/http"
	"slices"
	"strings"

	"oauthd/data"
	"oauthd/data/scope"
)

// clientForm is the user's input, kept when the form is shown again.
type clientForm struct {
	Name         string
	Public       bool
	RedirectURIs string // one per line
	// PostLogoutURIs are the post-logout redirect URIs, one per line.
	PostLogoutURIs string
	Groups         []choiceGroup
	Confirm        bool // migration confirmation
	// GrantTypes are the grant type checkboxes of a new client; JWKSURI
	// makes it authenticate with private_key_jwt.
	GrantTypes []grantChoice
	JWKSURI    string
}

// grantChoice is one grant type checkbox.
type grantChoice struct {
	Name, Description string
	Checked           bool
}

// grantChoices returns the grant type checkboxes with checked ticked
// (the default grant types when checked is nil).
func grantChoices(checked []string) []grantChoice {
	if checked == nil {
		checked = data.DefaultGrantTypes
	}
	desc := map[string]string{
		data.GrantAuthorizationCode: "Users sign in and allow the app (needs a redirect URI).",
		data.GrantRefreshToken:      "The app renews a user's tokens without asking again.",
		data.GrantClientCredentials: "A backend gets tokens for itself, without a user (confidential clients only).",
		data.GrantDeviceCode:        "A device without a browser or keyboard (a room display, a CLI) shows a code that the user confirms on /device.",
	}
	out := make([]grantChoice, 0, len(data.GrantTypes))
	for _, gt := range data.GrantTypes {
		out = append(out, grantChoice{Name: gt, Description: desc[gt], Checked: slices.Contains(checked, gt)})
	}
	return out
}

// choiceGroup is one level of scope checkboxes.
type choiceGroup struct {
	Heading string
	Level   string
	Scopes  []scopeChoice
}

type scopeChoice struct {
	Name, Description string
	Checked           bool
	Pending           bool // asked for, waiting for review
}

// choices returns every scope as a checkbox, grouped by level, with the
// names in checked ticked and those in pending marked as waiting for
// review.
func choices(checked []string, pending ...string) []choiceGroup {
	headings := []struct {
		level   scope.Level
		heading string
	}{{scope.Identity, "Sign-in (OpenID Connect)"}, {scope.User, "User scopes"}, {scope.Team, "Team scopes"}, {scope.Organization, "Organization scopes"}}
	var out []choiceGroup
	for _, hd := range headings {
		g := choiceGroup{Heading: hd.heading, Level: hd.level.String()}
		for _, s := range scope.All() {
			if s.Level == hd.level {
				g.Scopes = append(g.Scopes, scopeChoice{s.Name, s.Description, slices.Contains(checked, s.Name), slices.Contains(pending, s.Name)})
			}
		}
		out = append(out, g)
	}
	return out
}

// splitLines returns the non-empty trimmed lines of s.
func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// formScopes returns the checked scope boxes; admin checks the names.
func formScopes(r *http.Request) []string {
	var out []string
	for _, v := range r.PostForm["scope"] {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
