package consenttest

import (
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The helpers below serve the tests of every package with pages on the
// site (consent, consent/settings): requests through the router, the
// checks every page must pass, and golden files.

// Get sends a GET of target with cookies through h (the router).
func Get(h http.Handler, target string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	return Serve(h, httptest.NewRequest(http.MethodGet, target, nil), cookies...)
}

// Post sends form to target as a POST with cookies through h (the router).
func Post(h http.Handler, target string, form url.Values, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return Serve(h, req, cookies...)
}

// Serve sends req with cookies through h (the router).
func Serve(h http.Handler, req *http.Request, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Cookie returns the response's cookie named name, with or without the
// __Host- prefix (the pages use it when their AppURL is https), or nil.
func Cookie(rec *httptest.ResponseRecorder, name string) *http.Cookie {
	for _, c := range rec.Result().Cookies() {
		if c.Name == name || c.Name == "__Host-"+name {
			return c
		}
	}
	return nil
}

var csrfRE = regexp.MustCompile(`name="csrf_token" value="([^"]*)"`)

// FormCSRF returns the CSRF token of the page's first form that has one.
func FormCSRF(t testing.TB, body string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no csrf_token in page:\n%s", body)
	}
	return html.UnescapeString(m[1])
}

// LoginForm fetches the login page (/auth/login) through h and returns its
// CSRF cookie (oauthd_csrf) and the form's token, for a POST of the form.
func LoginForm(t testing.TB, h http.Handler) (*http.Cookie, string) {
	t.Helper()
	rec := Get(h, "/auth/login")
	ck := Cookie(rec, "oauthd_csrf")
	if ck == nil {
		t.Fatal("GET /auth/login set no oauthd_csrf cookie")
	}
	return ck, FormCSRF(t, rec.Body.String())
}

// CheckPageHeaders checks the security headers every HTML page carries: a
// strict CSP without scripts or inline styles, no framing, no-store,
// nosniff and no referrer.
func CheckPageHeaders(t testing.TB, h http.Header) {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	for _, d := range []string{"default-src 'none'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'", "style-src 'self'"} {
		if !strings.Contains(csp, d) {
			t.Errorf("CSP %q lacks %q", csp, d)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "script-src") {
		t.Errorf("CSP %q allows scripts or inline styles", csp)
	}
	want := map[string]string{
		"X-Frame-Options":        "DENY",
		"Cache-Control":          "no-store",
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "no-referrer",
	}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("%s = %q; want %q", k, h.Get(k), v)
		}
	}
}

// Golden compares got with the golden file at path (testdata/<name>.golden
// of the test's package), or with update rewrites the file. Each package
// declares its own -update flag and passes it.
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update in the test's package)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs (run go test -update in the test's package and review the diff)\ngot:\n%s", path, got)
	}
}
