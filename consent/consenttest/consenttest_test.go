package consenttest_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"oauthd/consent/consenttest"
)

// fakeServer imitates the pages of oauthd: a login form with a CSRF cookie,
// and a consent page with a sign-out form before the decision form.
func fakeServer(t *testing.T, redirectURI string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /auth/oauth2/authorize", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("client_id") != "good" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `<html><body><h1>Unknown application</h1><p class="lead">No such client.</p></body></html>`)
			return
		}
		if c, err := r.Cookie("sess"); err != nil || c.Value != "s1" {
			http.Redirect(w, r, "/auth/login?return_to="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		fmt.Fprintf(w, `<html><body><h1>App wants access</h1>
<form method="post" action="/auth/logout"><input type="hidden" name="csrf_token" value="c2"><button type="submit">Sign out</button></form>
<form method="post" action="/auth/oauth2/authorize">
<input type="hidden" name="csrf_token" value="c2">
<input type="hidden" name="state" value="%s">
<input type="hidden" name="redirect_uri" value="%s">
<button type="submit" name="action" value="deny">Deny</button>
<button type="submit" name="action" value="allow">Allow</button>
</form></body></html>`, r.URL.Query().Get("state"), r.URL.Query().Get("redirect_uri"))
	})
	mux.HandleFunc("GET /auth/login", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "lcsrf", Value: "c1", Path: "/"})
		fmt.Fprintf(w, `<html><body><h1>Sign in</h1><form method="post" action="/auth/login">
<input type="hidden" name="csrf_token" value="c1">
<input type="hidden" name="return_to" value="%s">
<input name="login" type="text"><input name="password" type="password">
<button type="submit">Sign in</button></form></body></html>`, r.URL.Query().Get("return_to"))
	})
	mux.HandleFunc("POST /auth/login", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("lcsrf")
		if err != nil || c.Value != r.PostFormValue("csrf_token") || r.Header.Get("Origin") == "" {
			http.Error(w, "csrf", http.StatusForbidden)
			return
		}
		if r.PostFormValue("login") != "ann" || r.PostFormValue("password") != "pw" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `<html><body><h1>Sign in</h1><p role="alert">Wrong login or password.</p></body></html>`)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "sess", Value: "s1", Path: "/"})
		http.Redirect(w, r, r.PostFormValue("return_to"), http.StatusSeeOther)
	})
	mux.HandleFunc("POST /auth/oauth2/authorize", func(w http.ResponseWriter, r *http.Request) {
		if r.PostFormValue("csrf_token") != "c2" {
			http.Error(w, "csrf", http.StatusForbidden)
			return
		}
		q := url.Values{"state": {r.PostFormValue("state")}}
		switch r.PostFormValue("action") {
		case "allow":
			q.Set("code", "the-code")
		case "deny":
			q.Set("error", "access_denied")
		default:
			http.Error(w, "no action", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, r.PostFormValue("redirect_uri")+"?"+q.Encode(), http.StatusSeeOther)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestAuthorize(t *testing.T) {
	// Nothing listens at the redirect URI: the browser must not follow it.
	const redirectURI = "http://127.0.0.1:1/callback"
	srv := fakeServer(t, redirectURI)
	authURL := func(client, state string) string {
		return srv.URL + "/auth/oauth2/authorize?" + url.Values{
			"client_id": {client}, "state": {state}, "redirect_uri": {redirectURI},
		}.Encode()
	}
	ctx := context.Background()
	b := consenttest.New()

	got, err := b.Authorize(ctx, authURL("good", "s-1"), "ann", "pw", true)
	if err != nil {
		t.Fatal(err)
	}
	if want := redirectURI + "?code=the-code&state=s-1"; got.String() != want {
		t.Errorf("Allow → %s; want %s", got, want)
	}

	// The session is kept: no login needed (a wrong password would fail).
	got, err = b.Authorize(ctx, authURL("good", "s-2"), "ann", "wrong", false)
	if err != nil {
		t.Fatal(err)
	}
	if want := redirectURI + "?error=access_denied&state=s-2"; got.String() != want {
		t.Errorf("Deny → %s; want %s", got, want)
	}

	// A wrong password in a fresh browser stops at the login page.
	_, err = consenttest.New().Authorize(ctx, authURL("good", "s-3"), "ann", "wrong", true)
	var pe *consenttest.PageError
	if !errors.As(err, &pe) || pe.StatusCode != http.StatusUnauthorized || pe.Message != "Wrong login or password." {
		t.Errorf("wrong password: %v; want a PageError 401 with the alert", err)
	}

	// An error page.
	_, err = b.Authorize(ctx, authURL("bad", "s-4"), "ann", "pw", true)
	if !errors.As(err, &pe) || pe.StatusCode != http.StatusBadRequest || pe.Title != "Unknown application" ||
		pe.Message != "No such client." || !errors.Is(err, consenttest.ErrUnexpectedPage) {
		t.Errorf("error page: %v; want a PageError 400 with title and message", err)
	}
	if err != nil && !strings.Contains(err.Error(), "400") {
		t.Errorf("error text %q does not name the status", err)
	}
}

func TestPKCE(t *testing.T) {
	v1, c1 := consenttest.PKCE()
	v2, c2 := consenttest.PKCE()
	if len(v1) != 43 || len(c1) != 43 || v1 == v2 || c1 == c2 || v1 == c1 {
		t.Errorf("PKCE() = %q, %q and %q, %q; want distinct 43-character values", v1, c1, v2, c2)
	}
	sum := sha256.Sum256([]byte(v1))
	if want := base64.RawURLEncoding.EncodeToString(sum[:]); c1 != want {
		t.Errorf("challenge %q; want BASE64URL(SHA256(verifier)) = %q (RFC 7636 §4.2)", c1, want)
	}
}
