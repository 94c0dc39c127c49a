package consent

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"oauthd/consent/handover"
)

// fakeVerifier answers every assertion with a (its result).
type fakeVerifier struct {
	a   handover.Assertion
	err error
}

func (f *fakeVerifier) Verify(context.Context, string) (handover.Assertion, error) { return f.a, f.err }

func newHandoverEnv(t *testing.T, appURL string, v AssertionVerifier) *env {
	t.Helper()
	en := newEnv(t, appURL)
	h, err := New(Config{Store: en.store, Authorizer: en.authz, Logger: slog.New(slog.DiscardHandler), Now: en.clock,
		AppURL: appURL, Handover: &Handover{LoginURL: "https://platform.example/login?lang=en", Verifier: v}})
	if err != nil {
		t.Fatal(err)
	}
	en.h, en.e = h, echo.New()
	h.Register(en.e)
	return en
}

// TestHandoverStartCookie: the redirect to the platform carries return_to
// and a challenge; the challenge cookie is HttpOnly, SameSite=Lax,
// __Host- and Secure on https, and holds the same challenge.
func TestHandoverStartCookie(t *testing.T) {
	en := newHandoverEnv(t, "https://app.example", &fakeVerifier{})
	rec := en.get(loginPath + "?return_to=" + url.QueryEscape(authorizePath+"?client_id=x"))
	loc, _ := url.Parse(rec.Header().Get("Location"))
	if rec.Code != http.StatusSeeOther || loc.Host != "platform.example" || loc.Query().Get("lang") != "en" ||
		loc.Query().Get("return_to") != "https://app.example/auth/login/handover" {
		t.Fatalf("GET /auth/login = %d %s; want 303 to the platform with return_to", rec.Code, loc)
	}
	ck := cookie(rec, "__Host-"+handoverCookie)
	if ck == nil || !ck.HttpOnly || !ck.Secure || ck.SameSite != http.SameSiteLaxMode || ck.Path != "/" ||
		!strings.HasPrefix(ck.Value, loc.Query().Get("challenge")+".") {
		t.Fatalf("handover cookie = %+v; want __Host-, HttpOnly, Secure, Lax, holding the challenge", ck)
	}
	// The built-in form is off.
	if rec := en.post(loginPath, url.Values{"login": {"alice"}, "password": {alicePassword}}); rec.Code != http.StatusNotFound {
		t.Fatalf("POST /auth/login with the handover = %d; want 404", rec.Code)
	}
}

// TestHandoverThrottledPerAddress: refused assertions from one address
// are limited (429 with Retry-After); another address is not affected.
func TestHandoverThrottledPerAddress(t *testing.T) {
	en := newHandoverEnv(t, "http://app.example", &fakeVerifier{err: handover.ErrSignature})
	send := func(addr string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, handoverPath+"?assertion=x", nil)
		req.RemoteAddr = addr + ":1234"
		return en.serve(req).Result()
	}
	for i := range 20 {
		if r := send("192.0.2.7"); r.StatusCode != http.StatusBadRequest {
			t.Fatalf("refusal %d = %d; want 400", i+1, r.StatusCode)
		}
	}
	r := send("192.0.2.7")
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Fatalf("21st refusal from one address = %d (Retry-After %q); want 429", r.StatusCode, r.Header.Get("Retry-After"))
	}
	if r := send("198.51.100.9"); r.StatusCode != http.StatusBadRequest {
		t.Fatalf("another address = %d; want 400 (not throttled)", r.StatusCode)
	}
}
