package issuer

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"oauthd/data"
)

// push posts a pushed authorization request for the public client "pub".
func (env *tkEnv) push(t *testing.T, kv ...string) string {
	t.Helper()
	base := []string{"client_id", "pub", "response_type", "code", "redirect_uri", tkRedirect, "scope", "PROFILE_READ",
		"state", "st-1", "code_challenge", tkChallenge(tkVerifier), "code_challenge_method", "S256"}
	rec := env.do(tkReq{path: "/v2/auth/oauth2/par", body: tkForm(append(base, kv...)...)})
	if rec.Code != http.StatusCreated || rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("PAR = %d %s", rec.Code, rec.Body)
	}
	var r struct {
		RequestURI string `json:"request_uri"`
		ExpiresIn  int    `json:"expires_in"`
	}
	json.Unmarshal(rec.Body.Bytes(), &r)
	if !strings.HasPrefix(r.RequestURI, "urn:ietf:params:oauth:request_uri:") || r.ExpiresIn != 60 {
		t.Fatalf("PAR response %s", rec.Body)
	}
	return r.RequestURI
}

// TestPAR: a pushed request is used through its request_uri once; the
// consent continuation survives the login and consent pages and is used
// up by the decision; everything else is refused.
func TestPAR(t *testing.T) {
	env := newTkEnv(t)
	ctx := context.Background()
	uri := env.push(t)
	q := url.Values{"client_id": {"pub"}, "request_uri": {uri}}
	ar, err := env.s.CheckAuthorize(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if ar.RedirectURI != tkRedirect || ar.State != "st-1" || ar.CodeChallenge != tkChallenge(tkVerifier) {
		t.Fatalf("pushed parameters: %+v", ar)
	}
	cont := ar.Query
	if !strings.HasPrefix(cont.Get("request_uri"), "urn:oauthd:consent:") || len(cont) != 2 {
		t.Fatalf("continuation %v", cont)
	}
	var pe *PageError
	if _, err := env.s.ParseAuthorize(ctx, q); !errors.As(err, &pe) {
		t.Fatalf("request_uri used twice: %v", err)
	}
	// The consent page and the decision with the continuation, after a
	// slow login (past the request_uri's 60 s).
	env.advance(5 * time.Minute)
	if _, err := env.s.ParseAuthorize(ctx, cont); err != nil {
		t.Fatalf("consent page: %v", err)
	}
	to, err := env.s.Approve(ctx, cont, tkUser)
	if err != nil || !strings.HasPrefix(to, tkRedirect+"?code=") || !strings.Contains(to, "state=st-1") {
		t.Fatalf("Approve = %q, %v", to, err)
	}
	if _, err := env.s.Approve(ctx, cont, tkUser); !errors.As(err, &pe) {
		t.Fatalf("second Approve: %v", err)
	}
	if _, err := env.s.Deny(ctx, cont, tkUser); !errors.As(err, &pe) {
		t.Fatalf("Deny after Approve: %v", err)
	}
	code, _ := url.Parse(to)
	env.mustTokens(env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code.Query().Get("code"),
		"redirect_uri", tkRedirect, "client_id", "pub", "code_verifier", tkVerifier)}))
}

func TestPARRefused(t *testing.T) {
	env := newTkEnv(t)
	ctx := context.Background()
	var pe *PageError
	for name, q := range map[string]url.Values{
		"mixed parameters":  {"client_id": {"pub"}, "request_uri": {env.push(t)}, "scope": {"PROFILE_READ"}},
		"another client":    {"client_id": {"conf"}, "request_uri": {env.push(t)}},
		"forged":            {"client_id": {"pub"}, "request_uri": {"urn:ietf:params:oauth:request_uri:AAAA"}},
		"tampered":          {"client_id": {"pub"}, "request_uri": {tamperAt(env.push(t), 60)}},
		"tampered last":     {"client_id": {"pub"}, "request_uri": {tamperAt(env.push(t), -1)}},
		"continuation kind": {"client_id": {"pub"}, "request_uri": {strings.Replace(env.push(t), "urn:ietf:params:oauth:request_uri:", "urn:oauthd:consent:", 1)}},
	} {
		if _, err := env.s.CheckAuthorize(ctx, q); !errors.As(err, &pe) {
			t.Errorf("%s: %v; want a PageError", name, err)
		}
	}
	expired := env.push(t)
	env.advance(61 * time.Second)
	if _, err := env.s.CheckAuthorize(ctx, url.Values{"client_id": {"pub"}, "request_uri": {expired}}); !errors.As(err, &pe) {
		t.Errorf("expired: %v", err)
	}
	// The endpoint validates like the authorization endpoint, in JSON.
	for name, kv := range map[string][]string{
		"pushed request_uri":    {"client_id", "pub", "request_uri", "urn:x", "redirect_uri", tkRedirect, "scope", "PROFILE_READ", "code_challenge", tkChallenge(tkVerifier)},
		"unregistered redirect": {"client_id", "pub", "redirect_uri", "https://evil.example/cb", "scope", "PROFILE_READ", "code_challenge", tkChallenge(tkVerifier)},
		"unknown scope":         {"client_id", "pub", "redirect_uri", tkRedirect, "scope", "NOPE", "code_challenge", tkChallenge(tkVerifier)},
		"no PKCE (public)":      {"client_id", "pub", "redirect_uri", tkRedirect, "scope", "PROFILE_READ"},
	} {
		rec := env.do(tkReq{path: "/v2/auth/oauth2/par", body: tkForm(kv...)})
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", name, rec.Code, rec.Body)
		}
	}
	if rec := env.do(tkReq{path: "/v2/auth/oauth2/par", body: tkForm("client_id", "conf", "client_secret", "wrong", "redirect_uri", tkRedirect, "scope", "PROFILE_READ")}); rec.Code != http.StatusUnauthorized {
		t.Errorf("wrong secret: %d %s", rec.Code, rec.Body)
	}
	// require_pushed_authorization_requests: a plain request is refused.
	if _, err := env.store.UpdateClient(ctx, "pub", func(c data.Client) (data.Client, error) { c.RequirePAR = true; return c, nil }); err != nil {
		t.Fatal(err)
	}
	plain := url.Values{"client_id": {"pub"}, "redirect_uri": {tkRedirect}, "scope": {"PROFILE_READ"}, "code_challenge": {tkChallenge(tkVerifier)}}
	if _, err := env.s.CheckAuthorize(ctx, plain); !errors.As(err, &pe) {
		t.Errorf("plain request of a PAR-only client: %v", err)
	}
	if _, err := env.s.CheckAuthorize(ctx, url.Values{"client_id": {"pub"}, "request_uri": {env.push(t)}}); err != nil {
		t.Errorf("pushed request of a PAR-only client: %v", err)
	}
}

// tamperAt changes the character of s at i (from the end when negative).
func tamperAt(s string, i int) string {
	if i < 0 {
		i += len(s)
	}
	c := byte('A')
	if s[i] == 'A' {
		c = 'B'
	}
	return s[:i] + string(c) + s[i+1:]
}
