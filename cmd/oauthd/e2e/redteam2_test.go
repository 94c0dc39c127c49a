package e2e

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
	"oauthd/data/postgres/pgtest"
)

// TestPostgresDownEveryEndpoint: PostgreSQL stops while a user holds a
// session, tokens and an ID token. Every endpoint a browser, an app or an
// anonymous caller reaches — not only the token endpoint, introspection
// and /v2/me that TestPostgresRestartUnderLoad hammers — answers without
// a 500 while it is down: 503 with Retry-After where the database is
// needed, an answer from the caches (keys, clients) where it is not.
func TestPostgresDownEveryEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("stops PostgreSQL")
	}
	pgtest.CanRestart(t)
	ctx := context.Background()
	rs := startReplicas(t, 1)
	var u struct{ ID int64 }
	oneJSON(t, mustOauthd(t, rs.db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--time-zone", e2eTimeZone, "--password-stdin", "--json"), &u)
	e, _ := rs.e2es(u.ID)
	id, secret := e.client(t, e2eRedirect, []string{"openid", "profile", "email", "PROFILE_READ"})
	const logoutURI = "http://127.0.0.1:9/out"
	e.cli(t, "clients", "post-logout-uris", "set", id, logoutURI)
	_, tok, err := signIn(ctx, e.base, id, secret, e2eRedirect, oidcBrowse(ctx, consenttest.New()))
	if err != nil {
		t.Fatal(err)
	}
	hint, _ := tok.Extra("id_token").(string)
	apps := signInToApps(t, e.base)
	_, page := apps.do(http.MethodGet, "/settings/apps", nil)
	csrf := consenttest.FormCSRF(t, page)
	authz := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "openid").AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	authzPath := strings.TrimPrefix(authz, e.base)

	down := make(chan struct{})
	go func() {
		defer close(down)
		pgtest.Restart(t, 8*time.Second)
	}()
	hc := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := func(path string, v url.Values, user, pass string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, e.base+path, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		return req
	}
	get := func(path, bearer string) *http.Request {
		req, _ := http.NewRequest(http.MethodGet, e.base+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		return req
	}
	// Wait until the server sees the outage.
	deadline := time.Now().Add(15 * time.Second)
	for {
		status := 0
		if resp, err := hc.Do(form("/v2/auth/oauth2/token", url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "redirect_uri": {e2eRedirect}}, id, secret)); err == nil {
			status = resp.StatusCode
			resp.Body.Close()
		}
		if status == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the token endpoint never answered 503 while PostgreSQL was stopped (last %d)", status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, tc := range []struct {
		name    string
		req     *http.Request
		browser bool // with the signed-in session
	}{
		{"userinfo", get("/v2/auth/oauth2/userinfo", tok.AccessToken), false},
		{"discovery", get("/.well-known/openid-configuration", ""), false},
		{"jwks", get("/.well-known/jwks.json", ""), false},
		{"revoked-grants feed", get("/.well-known/revoked-grants", ""), false},
		{"token (code)", form("/v2/auth/oauth2/token", url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "redirect_uri": {e2eRedirect}}, id, secret), false},
		{"revoke", form("/v2/auth/oauth2/revoke", url.Values{"token": {tok.RefreshToken}}, id, secret), false},
		{"par", form("/v2/auth/oauth2/par", url.Values{"response_type": {"code"}, "redirect_uri": {e2eRedirect}, "scope": {"openid"},
			"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}}, id, secret), false},
		{"authorize, anonymous", get(authzPath, ""), false},
		{"login page", get("/auth/login", ""), false},
		{"logout with hint, anonymous", get("/auth/logout?"+url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {logoutURI}}.Encode(), ""), false},
		{"authorize, signed in", get(authzPath, ""), true},
		{"connected apps", get("/settings/apps", ""), true},
		{"remove app", form("/settings/apps/"+id+"/revoke", url.Values{"csrf_token": {csrf}}, "", ""), true},
		{"settings clients", get("/settings/clients", ""), true},
		{"logout with hint, signed in", get("/auth/logout?"+url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {logoutURI}}.Encode(), ""), true},
	} {
		c := hc
		if tc.browser {
			c = apps.c
			tc.req.Header.Set("Origin", e.base)
		}
		resp, err := c.Do(tc.req)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("%s: %d", tc.name, resp.StatusCode)
		if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s with PostgreSQL down = %d; want no 5xx but 503:\n%.300s", tc.name, resp.StatusCode, body)
		}
		if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: 503 without Retry-After", tc.name)
		}
	}
	<-down
}
