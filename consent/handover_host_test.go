package consent

import (
	"html"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"oauthd/consent/handover"
)

// TestHandoverNoCookieHostHint: an answer that comes back without the
// handover cookie says which address to use when an address is the
// likely cause: opened on another host than the app URL's (the base
// URL's), or, on the app URL's host, a sign-in that may have started on
// the base URL's. A Host that is not a plain host[:port] is not repeated.
// A wrong challenge (the cookie was there) gets no such hint.
func TestHandoverNoCookieHostHint(t *testing.T) {
	const app, base = "http://localhost:8080", "http://127.0.0.1:8080"
	en := newEnv(t, app)
	h, err := New(Config{Store: en.store, Authorizer: en.authz, Logger: slog.New(slog.DiscardHandler), Now: en.clock, AppURL: app,
		Handover: &Handover{LoginURL: "http://127.0.0.1:9090/login", BaseURL: base,
			Verifier: &fakeVerifier{a: handover.Assertion{Challenge: strings.Repeat("c", 43)}}}})
	if err != nil {
		t.Fatal(err)
	}
	en.h, en.e = h, echo.New()
	h.Register(en.e)
	answer := func(host string, cookies ...*http.Cookie) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, handoverPath+"?assertion=x", nil)
		req.Host = host
		for _, c := range cookies {
			req.AddCookie(c)
		}
		rec := en.serve(req)
		return rec.Code, html.UnescapeString(rec.Body.String())
	}
	for _, tc := range []struct {
		host        string
		cookie      *http.Cookie
		want, never []string
	}{
		{host: "127.0.0.1:8080", want: []string{"did not start this sign-in", "opened at 127.0.0.1:8080", "starts and ends at localhost:8080", "open the application at http://localhost:8080"}},
		{host: "LOCALHOST:8080", want: []string{"did not start this sign-in", "started at 127.0.0.1:8080 (the API's address) rather than at localhost:8080", "link at http://localhost:8080"}, never: []string{"opened at"}},
		{host: "evil.example<b>", want: []string{"opened at another address"}, never: []string{"evil"}},
		{host: "localhost:8080", cookie: &http.Cookie{Name: handoverCookie, Value: strings.Repeat("d", 43) + "."},
			want: []string{"wrong challenge"}, never: []string{"127.0.0.1", "opened at"}},
	} {
		var cks []*http.Cookie
		if tc.cookie != nil {
			cks = append(cks, tc.cookie)
		}
		code, body := answer(tc.host, cks...)
		if code != http.StatusBadRequest {
			t.Errorf("Host %s: status %d; want 400", tc.host, code)
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("Host %s: the page does not say %q:\n%s", tc.host, w, body)
			}
		}
		for _, n := range tc.never {
			if strings.Contains(body, n) {
				t.Errorf("Host %s: the page says %q; it should not:\n%s", tc.host, n, body)
			}
		}
	}

	// Without a base URL other than the app URL, a page on the app URL's
	// host adds nothing.
	h2, err := New(Config{Store: en.store, Authorizer: en.authz, Logger: slog.New(slog.DiscardHandler), Now: en.clock, AppURL: app,
		Handover: &Handover{LoginURL: "http://127.0.0.1:9090/login", BaseURL: app,
			Verifier: &fakeVerifier{a: handover.Assertion{Challenge: strings.Repeat("c", 43)}}}})
	if err != nil {
		t.Fatal(err)
	}
	en.e = echo.New()
	h2.Register(en.e)
	if code, body := answer("localhost:8080"); code != http.StatusBadRequest || strings.Contains(body, "address") {
		t.Errorf("same base and app URL: %d %s; want 400 without an address hint", code, body)
	}
}
