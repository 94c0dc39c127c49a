package settings

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestSettingsRefusesUnsafeName: a client name entered on the settings
// page with a control character (C0, DEL, C1) or a bidi override is
// refused with a sentence that names the character; nothing is stored.
func TestSettingsRefusesUnsafeName(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"clear screen", "Acme\x1b[2J", "a control character (U+001B)"},
		{"conceal", "Acme\x1b[8m", "a control character (U+001B)"},
		{"forged line", "Acme\r\nscopes: PROFILE_READ", "a control character (U+000D)"},
		{"DEL", "Acme\x7f", "a control character (U+007F)"},
		{"C1", "Acme\u009b2J", "a C1 control character (U+009B)"},
		{"RLO", "Acme\u202Egnp.exe", "a bidirectional override (U+202E)"},
		{"RLI", "Acme\u2067x", "a bidirectional override (U+2067)"},
	}
	se := newSettingsEnv(t)
	sess, csrf := se.session(se.alice)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := se.post(newClientPath, url.Values{csrfField: {csrf}, "name": {tc.in}, "client_type": {"confidential"},
				"redirect_uris": {"https://acme.example/cb"}, "scope": {"PROFILE_READ"}}, sess)
			if body := html.UnescapeString(rec.Body.String()); rec.Code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
				t.Fatalf("create with name %q = %d; want 400 naming %q\n%s", tc.in, rec.Code, tc.want, body)
			}
		})
	}
	cs, err := se.store.ListClients(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if strings.HasPrefix(c.Name, "Acme") {
			t.Fatalf("a refused name was stored: %q", c.Name)
		}
	}
}
