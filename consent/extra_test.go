package consent

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"oauthd/data"
	"oauthd/issuer"
)

// The issuer and every backend fit the interfaces this package declares.
var (
	_ Authorizer = (*issuer.Server)(nil)
	_ Store      = data.Store(nil)
)

// Malformed or hostile form bodies get a 4xx page, never a 500, and change
// nothing.
func TestBadFormBodies(t *testing.T) {
	en := newEnv(t, "")
	sess := en.login("alice", alicePassword)
	ck, tok := en.loginForm()
	tests := []struct {
		name, path, body string
		cookies          []*http.Cookie
		want             int
	}{
		{"login bad escape", loginPath, "login=%zz&password=x&csrf_token=" + tok, []*http.Cookie{ck}, http.StatusBadRequest},
		{"login NUL and invalid UTF-8", loginPath, "login=a%00%ff&password=%00&csrf_token=" + tok, []*http.Cookie{ck}, http.StatusUnauthorized},
		{"login huge password", loginPath, "login=alice&password=" + strings.Repeat("a", 5000) + "&csrf_token=" + tok, []*http.Cookie{ck}, http.StatusUnauthorized},
		{"decision bad escape", authorizePath, "action=allow&csrf_token=%zz", []*http.Cookie{sess}, http.StatusBadRequest},
		{"logout bad escape", logoutPath, "csrf_token=%zz", []*http.Cookie{sess}, http.StatusBadRequest},
		{"session cookie junk", authorizePath, "action=allow", []*http.Cookie{{Name: sessionCookie, Value: "oauthd_ss_short%22"}}, http.StatusSeeOther},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for _, c := range tc.cookies {
				req.AddCookie(c)
			}
			rec := en.serve(req)
			if rec.Code != tc.want {
				t.Errorf("status %d; want %d\n%s", rec.Code, tc.want, rec.Body)
			}
		})
	}
	if a, d := en.authz.counts(); a != 0 || d != 0 {
		t.Errorf("approvals, denials = %d, %d; want none", a, d)
	}
}

func FuzzSafeReturnTo(f *testing.F) {
	for _, s := range []string{
		authorizePath + "?client_id=a&state=b",
		"//evil.example", `/\evil`, "https://evil.example/auth/oauth2/authorize?x",
		authorizePath + "?x=%0d%0a", authorizePath + "?@evil.example",
		"/settings/clients/abc", "/settings//evil.example", "/settings/../x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := safeReturnTo(in)
		if got == "" {
			return
		}
		wantPath := authorizePath
		if strings.HasPrefix(got, settingsPrefix) {
			wantPath = ""
		}
		if got != in || !strings.HasPrefix(got, authorizePath+"?") && !strings.HasPrefix(got, settingsPrefix) {
			t.Fatalf("safeReturnTo(%q) = %q", in, got)
		}
		// The browser resolves it against the app's own origin.
		base, _ := url.Parse("https://app.example/auth/login")
		ref, err := url.Parse(got)
		if err != nil {
			t.Fatalf("accepted unparsable %q", got)
		}
		if u := base.ResolveReference(ref); u.Host != "app.example" || wantPath != "" && u.Path != wantPath ||
			wantPath == "" && (u.Path != got || !strings.HasPrefix(u.Path, settingsPrefix)) {
			t.Fatalf("safeReturnTo(%q) leads to %s", in, u)
		}
		if strings.ContainsAny(got, "\\\r\n\t ") {
			t.Fatalf("safeReturnTo(%q) kept a dangerous character", in)
		}
	})
}

func BenchmarkConsentPage(b *testing.B) {
	en := newEnv(b, "")
	sess := en.login("alice", alicePassword)
	target := authorizePath + "?" + authorizeQuery().Encode()
	b.ReportAllocs()
	for b.Loop() {
		rec := en.get(target, sess)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
}

// TestSettingsNotMountedWithoutClients: the login pages alone serve no
// client settings (package consent/settings mounts them).
func TestSettingsNotMountedWithoutClients(t *testing.T) {
	en := newEnv(t, "")
	if rec := en.get("/settings/clients"); rec.Code != http.StatusNotFound {
		t.Errorf("GET /settings/clients without consent/settings = %d; want 404", rec.Code)
	}
}

func TestSettingsReturnTo(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/settings/clients", "/settings/clients"},
		{"/settings/clients/abc123", "/settings/clients/abc123"},
		{"/settings/clients/new", "/settings/clients/new"},
		{"/settings//evil.example", ""},
		{"/settings/../auth/logout", ""},
		{"/settings/clients?x=1", ""},
		{"/settings/clients#x", ""},
		{`/settings/\evil`, ""},
		{"/settings/%2e%2e/x", ""},
		{"https://evil.example/settings/clients", ""},
		{"//evil.example/settings/clients", ""},
		{"/settingsX", ""},
	} {
		if got := safeReturnTo(tc.in); got != tc.want {
			t.Errorf("safeReturnTo(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
