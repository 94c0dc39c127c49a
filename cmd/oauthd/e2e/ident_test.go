package e2e

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// handoverWith signs jar's browser in through the platform with the
// platform's claims changed by mutate (a nil value removes the claim),
// and returns the handover's answer.
func (h *handoverServer) handoverWith(t *testing.T, jar http.CookieJar, mutate map[string]any) (int, string) {
	t.Helper()
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(h.base + "/auth/login?return_to=%2Fsettings%2Fclients")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), h.p.URL+"/login?") {
		t.Fatalf("GET /auth/login = %d to %q; want the platform's login page", resp.StatusCode, resp.Header.Get("Location"))
	}
	claims := h.p.claims(loc.Query().Get("challenge"))
	for k, v := range mutate {
		if v == nil {
			delete(claims, k)
		} else {
			claims[k] = v
		}
	}
	status, _, body := browse(t, jar, http.MethodGet, h.base+"/auth/login/handover?assertion="+url.QueryEscape(h.p.sign(jwt.MapClaims(claims))), nil)
	return status, html.UnescapeString(body)
}

// TestHandoverOneReading: issue 31's identifiers through the login
// handover with a stand-in platform: an email with any default ignorable
// or blank character, a display name that hides characters or shows
// nothing, and a time_zone that is not an IANA name ("Local", "") are
// refused with 400 saying why, for a new platform user and for a known
// one, whose record stays as it was; a name with a ZWNJ that Persian
// needs, and a time_zone left out (UTC), pass.
func TestHandoverOneReading(t *testing.T) {
	h := startHandover(t)
	if status, body := h.handoverWith(t, newJar(t), map[string]any{"sub": "u-31", "email": "pat31@plat.test", "name": "Pat", "time_zone": "Europe/Paris"}); status != http.StatusOK {
		t.Fatalf("the known user's first login: %d\n%s", status, body)
	}
	type user struct {
		ID         int64  `json:"id"`
		Email      string `json:"email"`
		Name       string `json:"name"`
		TimeZone   string `json:"time_zone"`
		ExternalID string `json:"external_id"`
	}
	users := func() map[string]user {
		var us []user
		oneJSON(t, h.cli(t, "users", "list", "--json"), &us)
		m := map[string]user{}
		for _, u := range us {
			m[u.ExternalID] = u
		}
		return m
	}
	before := users()

	for _, tc := range []struct {
		name  string
		claim string
		value any
		want  string
	}{
		{"email with a combining grapheme joiner", "email", "pat\u034f31@plat.test", "U+034F"},
		{"email with a variation selector", "email", "pat31\ufe0f@plat.test", "U+FE0F"},
		{"email with a hangul filler", "email", "pat31\u3164@plat.test", "U+3164"},
		{"email with a tag character", "email", "pat31\U000e0041@plat.test", "U+E0041"},
		{"email with a soft hyphen in the domain", "email", "pat31@pl\u00adat.test", "U+00AD"},
		{"email with a braille blank", "email", "pat31\u2800@plat.test", "U+2800"},
		{"name of hangul fillers", "name", "\u3164\u3164", "U+3164"},
		{"name of a braille blank", "name", "\u2800", "no visible character"},
		{"name with tag characters", "name", "Pat\U000e0041\U000e0042", "U+E0041"},
		{"name with a variation selector", "name", "Pat \u2764\ufe0f", "U+FE0F"},
		{"name with a ZWJ between Latin letters", "name", "Pa\u200dt", "U+200D"},
		{"time_zone Local", "time_zone", "Local", `"Local" is not an IANA time zone`},
		{"time_zone empty", "time_zone", "", `"" is not an IANA time zone`},
		{"time_zone localtime", "time_zone", "localtime", "not an IANA time zone"},
	} {
		for _, sub := range []string{"u-31", "u-new-31"} {
			// A new user alternates with the known one; fewer than the
			// 20 refusals the address may have at once.
			if sub == "u-new-31" && tc.claim != "email" && tc.claim != "time_zone" {
				continue
			}
			email := "pat31@plat.test"
			if sub == "u-new-31" {
				email = "new31@plat.test"
			}
			claims := map[string]any{"sub": sub, "email": email, "name": "Pat", "time_zone": "Europe/Paris"}
			claims[tc.claim] = tc.value
			status, body := h.handoverWith(t, newJar(t), claims)
			if status != http.StatusBadRequest || !strings.Contains(body, tc.want) {
				t.Errorf("%s (%s): %d; want 400 saying %q\n%s", tc.name, sub, status, tc.want, body)
			}
			if sub == "u-new-31" {
				break
			}
		}
	}
	after := users()
	if len(after) != len(before) || after["u-31"] != before["u-31"] {
		t.Errorf("after the refusals: %+v; want the users as before %+v", after, before)
	}

	// What passes: a ZWNJ where Persian needs it; no time_zone is UTC.
	persian := "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"
	if status, body := h.handoverWith(t, newJar(t), map[string]any{"sub": "u-31", "email": "pat31@plat.test", "name": persian, "time_zone": nil}); status != http.StatusOK {
		t.Fatalf("a Persian name with its ZWNJ, no time_zone: %d\n%s", status, body)
	}
	if u := users()["u-31"]; u.Name != persian || u.TimeZone != "UTC" {
		t.Errorf("after the login: %+v; want the Persian name and UTC", u)
	}
}
