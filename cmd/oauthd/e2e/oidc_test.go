package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
)

// signIn is how an application signs a user in with oauthd, as
// docs/OIDC.md shows it (TestOIDCDocExample keeps the two equal):
// discovery, the code flow with PKCE and a nonce, the ID token checked by
// go-oidc (signature, iss, aud, exp, nonce, at_hash). browse stands for
// the user's browser: it opens the authorization URL and returns the
// query the redirect URI received.
func signIn(ctx context.Context, issuer, clientID, secret, redirectURI string,
	browse func(authURL string) (url.Values, error)) (*oidc.IDToken, *oauth2.Token, error) {
	provider, err := oidc.NewProvider(ctx, issuer) // {issuer}/.well-known/openid-configuration
	if err != nil {
		return nil, nil, err
	}
	conf := oauth2.Config{ClientID: clientID, ClientSecret: secret, RedirectURL: redirectURI,
		Endpoint: provider.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "profile", "email"}}
	state, nonce, verifier := rand.Text(), rand.Text(), oauth2.GenerateVerifier()
	q, err := browse(conf.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)))
	if err != nil || q.Get("state") != state || q.Get("code") == "" {
		return nil, nil, fmt.Errorf("authorization failed: %v %s", err, q.Get("error"))
	}
	tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		return nil, nil, err
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := provider.Verifier(&oidc.Config{ClientID: clientID}).Verify(ctx, raw)
	if err != nil || idt.Nonce != nonce || idt.VerifyAccessToken(tok.AccessToken) != nil {
		return nil, nil, fmt.Errorf("bad ID token: %v", err)
	}
	return idt, tok, nil
}

// oidcBrowse is signIn's browse for a consenttest.Browser: login and
// consent pages when they come, and the redirect's query.
func oidcBrowse(ctx context.Context, b *consenttest.Browser) func(string) (url.Values, error) {
	return func(authURL string) (url.Values, error) {
		got, err := b.Authorize(ctx, authURL, e2eEmail, e2ePassword, true)
		if err != nil {
			return nil, err
		}
		return got.Query(), nil
	}
}

// oidcClaims are the claims the test reads from ID tokens and userinfo.
type oidcClaims struct {
	AuthTime          int64  `json:"auth_time"`
	AZP               string `json:"azp"`
	Name              string `json:"name"`
	PreferredUsername string `json:"preferred_username"`
	Zoneinfo          string `json:"zoneinfo"`
	Email             string `json:"email"`
	EmailVerified     *bool  `json:"email_verified"`
	Nonce             string `json:"nonce"`
}

// TestOIDCGoOIDC is the interop test with the Go libraries of the
// OpenID world, github.com/coreos/go-oidc/v3 and golang.org/x/oauth2,
// against the real binary: discovery, code + PKCE + nonce, ID token validation (at_hash
// included), userinfo, refresh, prompt=none with and without a session,
// max_age, and RP-initiated logout.
func TestOIDCGoOIDC(t *testing.T) {
	e := startE2E(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const logoutURI = "http://127.0.0.1:9/logged-out"
	id, secret := e.client(t, e2eRedirect, []string{"openid", "profile", "email", "PROFILE_READ"})
	e.cli(t, "clients", "post-logout-uris", "set", id, logoutURI)
	sub := strconv.FormatInt(e.userID, 10)

	// 1. Sign in: discovery, code + PKCE + nonce, the ID token verified.
	b := consenttest.New()
	idt, tok, err := signIn(ctx, e.base, id, secret, e2eRedirect, oidcBrowse(ctx, b))
	if err != nil {
		t.Fatalf("sign in: %v", err)
	}
	var c oidcClaims
	if err := idt.Claims(&c); err != nil {
		t.Fatal(err)
	}
	if idt.Issuer != e.base || idt.Subject != sub || len(idt.Audience) != 1 || idt.Audience[0] != id || c.AZP != id ||
		c.Name != e2eName || c.PreferredUsername != e2eUsername || c.Zoneinfo != e2eTimeZone || c.Email != e2eEmail ||
		c.EmailVerified == nil || *c.EmailVerified || c.AuthTime == 0 || idt.AccessTokenHash == "" {
		t.Fatalf("ID token %+v claims %+v", idt, c)
	}
	provider, err := oidc.NewProvider(ctx, e.base)
	if err != nil {
		t.Fatal(err)
	}
	verifier := provider.Verifier(&oidc.Config{ClientID: id})
	conf := oauth2.Config{ClientID: id, ClientSecret: secret, RedirectURL: e2eRedirect, Endpoint: provider.Endpoint(),
		Scopes: []string{oidc.ScopeOpenID, "profile", "email"}}

	// 2. userinfo: the same subject and claims.
	ui, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		t.Fatalf("userinfo: %v", err)
	}
	var uc oidcClaims
	ui.Claims(&uc)
	if ui.Subject != sub || ui.Email != e2eEmail || ui.EmailVerified || uc.Name != e2eName {
		t.Fatalf("userinfo %+v %+v", ui, uc)
	}

	// 3. Refresh: a new ID token, same sub and auth_time, no nonce.
	next, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	raw, _ := next.Extra("id_token").(string)
	ridt, err := verifier.Verify(ctx, raw)
	if err != nil {
		t.Fatalf("refreshed ID token: %v", err)
	}
	var rc oidcClaims
	ridt.Claims(&rc)
	if ridt.Subject != sub || rc.AuthTime != c.AuthTime || rc.Nonce != "" || ridt.VerifyAccessToken(next.AccessToken) != nil {
		t.Fatalf("refreshed ID token %+v %+v; want sub %s, auth_time %d, no nonce", ridt, rc, sub, c.AuthTime)
	}

	// 4. prompt=none with the session: a code without any page.
	idt2, _, err := signIn(ctx, e.base, id, secret, e2eRedirect, func(u string) (url.Values, error) {
		got, err := oidcBrowse(ctx, b)(u + "&prompt=none")
		if err == nil && got.Get("code") == "" {
			err = fmt.Errorf("prompt=none with a session: %v", got)
		}
		return got, err
	})
	if err != nil || idt2.Subject != sub {
		t.Fatalf("prompt=none with a session: %v", err)
	}
	//    ... and without one (another browser): login_required, nothing else.
	got, err := consenttest.New().Authorize(ctx, conf.AuthCodeURL("s1", oidc.Nonce("n1"), oauth2.SetAuthURLParam("prompt", "none"),
		oauth2.S256ChallengeOption(oauth2.GenerateVerifier())), "", "", true)
	if err != nil || got.Query().Get("error") != "login_required" || got.Query().Get("state") != "s1" || got.Query().Has("code") {
		t.Fatalf("prompt=none without a session: %v %v; want login_required", got, err)
	}

	// 5. max_age: an older login is asked again; auth_time moves.
	time.Sleep(1100 * time.Millisecond)
	idt3, _, err := signIn(ctx, e.base, id, secret, e2eRedirect, func(u string) (url.Values, error) {
		return oidcBrowse(ctx, b)(u + "&max_age=1")
	})
	if err != nil {
		t.Fatalf("max_age: %v", err)
	}
	var c3 oidcClaims
	idt3.Claims(&c3)
	if c3.AuthTime <= c.AuthTime {
		t.Fatalf("auth_time after max_age = %d; want later than %d (a fresh login)", c3.AuthTime, c.AuthTime)
	}

	// 6. RP-initiated logout: end_session_endpoint from discovery; the
	// session ends, the browser lands on the registered URI with state.
	var meta struct {
		EndSession string `json:"end_session_endpoint"`
	}
	provider.Claims(&meta)
	if meta.EndSession != e.base+"/auth/logout" {
		t.Fatalf("end_session_endpoint = %q", meta.EndSession)
	}
	logout := meta.EndSession + "?" + url.Values{"id_token_hint": {raw}, "post_logout_redirect_uri": {logoutURI}, "state": {"bye"}}.Encode()
	resp, err := b.Client.Get(logout)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != logoutURI+"?state=bye" {
		t.Fatalf("logout = %d %q; want 303 to %s?state=bye", resp.StatusCode, resp.Header.Get("Location"), logoutURI)
	}
	got, err = b.Authorize(ctx, conf.AuthCodeURL("s2", oidc.Nonce("n2"), oauth2.SetAuthURLParam("prompt", "none"),
		oauth2.S256ChallengeOption(oauth2.GenerateVerifier())), "", "", true)
	if err != nil || got.Query().Get("error") != "login_required" {
		t.Fatalf("prompt=none after logout: %v %v; want login_required", got, err)
	}
	// The session ended, not the grants: the tokens still work.
	if ui, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(next)); err != nil || ui.Subject != sub {
		t.Fatalf("userinfo after logout: %v", err)
	}
}

// TestOIDCLogoutAttacks: the end-session endpoint as an attacker uses
// it. Without a valid hint and a registered URI it shows a page and never
// redirects; a hint for another user's session only asks; a hint of
// client A with a URI of client B, or a URI variant, never redirects.
func TestOIDCLogoutAttacks(t *testing.T) {
	e := startE2E(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	idA, secretA := e.client(t, e2eRedirect, []string{"openid", "profile", "email"})
	idB, _ := e.client(t, e2eRedirect, []string{"openid"})
	const uriA, uriB = "http://127.0.0.1:9/a-out", "http://127.0.0.1:9/b-out"
	e.cli(t, "clients", "post-logout-uris", "set", idA, uriA)
	e.cli(t, "clients", "post-logout-uris", "set", idB, uriB)
	b := consenttest.New()
	_, tok, err := signIn(ctx, e.base, idA, secretA, e2eRedirect, oidcBrowse(ctx, b))
	if err != nil {
		t.Fatal(err)
	}
	hint, _ := tok.Extra("id_token").(string)
	logout := func(c *http.Client, q url.Values) (int, string, string) {
		resp, err := c.Get(e.base + "/auth/logout?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var sb strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			sb.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, resp.Header.Get("Location"), sb.String()
	}
	stranger := consenttest.New() // no session
	for _, tc := range []struct {
		name      string
		q         url.Values
		validHint bool // a valid hint of this user (only the URI is wrong)
	}{
		{"no hint", url.Values{"post_logout_redirect_uri": {uriA}, "client_id": {idA}}, false},
		{"hint of A, client_id B", url.Values{"id_token_hint": {hint}, "client_id": {idB}, "post_logout_redirect_uri": {uriB}}, false},
		{"tampered hint", url.Values{"id_token_hint": {hint[:len(hint)-4] + "AAAA"}, "post_logout_redirect_uri": {uriA}}, false},
		{"access token as hint", url.Values{"id_token_hint": {tok.AccessToken}, "post_logout_redirect_uri": {uriA}}, false},
		{"hint of A, URI of B", url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {uriB}}, true},
		{"URI with a suffix", url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {uriA + "/x"}}, true},
		{"open redirect", url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {"https://evil.example.com/"}}, true},
	} {
		status, loc, body := logout(stranger.Client, tc.q)
		if status != http.StatusOK || loc != "" || !strings.Contains(body, "You are signed out") {
			t.Fatalf("%s without a session: %d %q; want the logged-out page, never a redirect", tc.name, status, loc)
		}
		if tc.validHint {
			continue // with the session it would end it: checked below
		}
		status, loc, body = logout(b.Client, tc.q)
		if status != http.StatusOK || loc != "" || !strings.Contains(body, "Sign out?") {
			t.Fatalf("%s with a session: %d %q; want the user asked, never a redirect", tc.name, status, loc)
		}
	}
	// The session survived every try above: prompt=none still gets a code.
	conf := e.config(idA, secretA, e2eRedirect, oauth2.AuthStyleInParams, "openid")
	got, err := b.Authorize(ctx, conf.AuthCodeURL("s", oauth2.SetAuthURLParam("prompt", "none"), oauth2.SetAuthURLParam("nonce", "nn"),
		oauth2.S256ChallengeOption(oauth2.GenerateVerifier())), "", "", true)
	if err != nil || got.Query().Get("code") == "" {
		t.Fatalf("the session did not survive the logout attempts: %v %v", got, err)
	}
	// An ID token of this user for client A, presented by client B as
	// id_token_hint at the authorization endpoint: refused.
	confB := e.config(idB, "", e2eRedirect, oauth2.AuthStyleInParams, "openid")
	got, err = b.Authorize(ctx, confB.AuthCodeURL("s", oauth2.SetAuthURLParam("id_token_hint", hint), oauth2.SetAuthURLParam("prompt", "none"),
		oauth2.S256ChallengeOption(oauth2.GenerateVerifier())), "", "", true)
	if err != nil || got.Query().Get("error") != "invalid_request" {
		t.Fatalf("client B with client A's ID token as hint: %v %v; want invalid_request", got, err)
	}
	// A valid hint with another client's URI: the session ends, the
	// logged-out page, no redirect.
	status, loc, body := logout(b.Client, url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {uriB}, "state": {"x"}})
	if status != http.StatusOK || loc != "" || !strings.Contains(body, "You are signed out") {
		t.Fatalf("logout with another client's URI = %d %q; want the logged-out page", status, loc)
	}
	// Sign in again; a valid hint and the registered URI: the session
	// ends, the redirect carries state.
	if _, tok, err = signIn(ctx, e.base, idA, secretA, e2eRedirect, oidcBrowse(ctx, b)); err != nil {
		t.Fatal(err)
	}
	hint, _ = tok.Extra("id_token").(string)
	status, loc, _ = logout(b.Client, url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {uriA}, "state": {"x y"}})
	if status != http.StatusSeeOther || loc != uriA+"?state=x+y" {
		t.Fatalf("logout = %d %q", status, loc)
	}
}

// TestOIDCDocExample: docs/OIDC.md quotes signIn as it is here.
func TestOIDCDocExample(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/OIDC.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("oidc_test.go")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(src), "func signIn(")
	end := strings.Index(string(src)[start:], "\n}\n")
	fn := string(src)[start : start+end+2]
	if !strings.Contains(string(doc), fn) {
		t.Fatalf("docs/OIDC.md does not quote signIn of cmd/oauthd/e2e/oidc_test.go as it is:\n%s", fn)
	}
	if n := strings.Count(fn, "\n"); n > 30 {
		t.Errorf("the example is %d lines; keep it short", n)
	}
}

// TestOIDCReplays: an attacker who captured an authorization link or a
// code. The same link (same nonce) used again by the same client is
// refused (invalid_request): a captured link yields one ID token with
// that nonce. A code used twice is invalid_grant and revokes what it
// issued. An ID token is not an access token: userinfo refuses it.
func TestOIDCReplays(t *testing.T) {
	e := startE2E(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, secret := e.client(t, e2eRedirect, []string{"openid"})
	conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "openid")
	verifier := oauth2.GenerateVerifier()
	link := conf.AuthCodeURL("st", oidc.Nonce("captured-nonce"), oauth2.S256ChallengeOption(verifier))
	b := consenttest.New()
	first, err := b.Authorize(ctx, link, e2eEmail, e2ePassword, true)
	if err != nil || first.Query().Get("code") == "" {
		t.Fatalf("first use: %v %v", first, err)
	}
	again, err := b.Authorize(ctx, link, e2eEmail, e2ePassword, true)
	if err != nil || again.Query().Get("error") != "invalid_request" || again.Query().Has("code") {
		t.Fatalf("the same nonce again: %v %v; want invalid_request", again, err)
	}
	tok, err := conf.Exchange(ctx, first.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conf.Exchange(ctx, first.Query().Get("code"), oauth2.VerifierOption(verifier)); err == nil || !strings.Contains(err.Error(), "invalid_grant") {
		t.Fatalf("code replay: %v; want invalid_grant", err)
	}
	// The replay revoked the grant: its access token is refused at userinfo.
	if status, _ := e2eGet(t, e.base+"/v2/auth/oauth2/userinfo", tok.AccessToken, nil); status != http.StatusUnauthorized {
		t.Fatalf("userinfo after the code replay = %d; want 401", status)
	}
	idToken, _ := tok.Extra("id_token").(string)
	if status, _ := e2eGet(t, e.base+"/v2/auth/oauth2/userinfo", idToken, nil); status != http.StatusUnauthorized {
		t.Fatalf("userinfo with an ID token = %d; want 401", status)
	}
}
