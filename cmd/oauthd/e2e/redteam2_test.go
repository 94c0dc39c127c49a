package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os/exec"
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
// needed, an answer from the caches (keys, clients) where it is not. The
// newer endpoints that need it — the device authorization request, a
// device poll, client_credentials, an authorization request of a client
// ID metadata document (its host's review), the device page — answer 503
// and nothing else, and the agents commands refuse with a sentence.
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
	// The newer endpoints' callers: a device (a public device_code client)
	// holding a device code to poll, a backend (client_credentials), and an
	// AI assistant identified by its client ID metadata document.
	var device struct {
		ClientID string `json:"client_id"`
	}
	oneJSON(t, e.cli(t, "clients", "create", "--owner", e2eEmail, "--name", "Room display", "--public",
		"--grant-type", "device_code", "--scope", "PROFILE_READ", "--json"), &device)
	e.cli(t, "clients", "approve", device.ClientID)
	da, err := (&oauth2.Config{ClientID: device.ClientID, Scopes: []string{"PROFILE_READ"}, Endpoint: oauth2.Endpoint{
		DeviceAuthURL: e.base + "/v2/auth/oauth2/device_authorization", TokenURL: e.tokenURL(), AuthStyle: oauth2.AuthStyleInParams}}).DeviceAuth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var backend struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	oneJSON(t, e.cli(t, "clients", "create", "--owner", e2eEmail, "--name", "Nightly sync", "--grant-type", "client_credentials",
		"--scope", "PROFILE_READ", "--json"), &backend)
	e.cli(t, "clients", "approve", backend.ClientID)
	const assistantHost = "assistant.example"
	e.cli(t, "agents", "allow", assistantHost, "--scope", "PROFILE_READ")
	metaAuthz := "/auth/oauth2/authorize?" + url.Values{"response_type": {"code"}, "client_id": {"https://" + assistantHost + "/oauth/client.json"},
		"redirect_uri": {"http://127.0.0.1:9/callback"}, "scope": {"PROFILE_READ"}, "code_challenge": {strings.Repeat("a", 43)},
		"code_challenge_method": {"S256"}}.Encode()

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
		store   bool // needs the database: 503 and nothing else
	}{
		{"userinfo", get("/v2/auth/oauth2/userinfo", tok.AccessToken), false, false},
		{"discovery", get("/.well-known/openid-configuration", ""), false, false},
		{"jwks", get("/.well-known/jwks.json", ""), false, false},
		{"revoked-grants feed", get("/.well-known/revoked-grants", ""), false, false},
		{"token (code)", form("/v2/auth/oauth2/token", url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "redirect_uri": {e2eRedirect}}, id, secret), false, false},
		{"revoke", form("/v2/auth/oauth2/revoke", url.Values{"token": {tok.RefreshToken}}, id, secret), false, false},
		{"par", form("/v2/auth/oauth2/par", url.Values{"response_type": {"code"}, "redirect_uri": {e2eRedirect}, "scope": {"openid"},
			"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}}, id, secret), false, false},
		{"authorize, anonymous", get(authzPath, ""), false, false},
		{"login page", get("/auth/login", ""), false, false},
		{"logout with hint, anonymous", get("/auth/logout?"+url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {logoutURI}}.Encode(), ""), false, false},
		{"authorize, signed in", get(authzPath, ""), true, false},
		{"connected apps", get("/settings/apps", ""), true, false},
		{"remove app", form("/settings/apps/"+id+"/revoke", url.Values{"csrf_token": {csrf}}, "", ""), true, false},
		{"settings clients", get("/settings/clients", ""), true, false},
		{"logout with hint, signed in", get("/auth/logout?"+url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {logoutURI}}.Encode(), ""), true, false},
		{"device authorization", form("/v2/auth/oauth2/device_authorization", url.Values{"client_id": {device.ClientID}, "scope": {"PROFILE_READ"}}, "", ""), false, true},
		{"device poll", form("/v2/auth/oauth2/token", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"},
			"device_code": {da.DeviceCode}, "client_id": {device.ClientID}}, "", ""), false, true},
		{"token (client_credentials)", form("/v2/auth/oauth2/token", url.Values{"grant_type": {"client_credentials"}}, backend.ClientID, backend.ClientSecret), false, true},
		{"authorize, metadata document", get(metaAuthz, ""), false, true},
		{"device page", get("/device", ""), true, true},
		{"device page, a code", form("/device", url.Values{"csrf_token": {csrf}, "action": {"lookup"}, "user_code": {da.UserCode}}, "", ""), true, true},
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
		if tc.store && resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s with PostgreSQL down = %d; want 503 (it needs the database):\n%.300s", tc.name, resp.StatusCode, body)
		}
	}
	// The agents commands (on PostgreSQL the CLI uses the database
	// directly): a refusal that says what went wrong, exit status 1, no
	// change and no crash.
	for _, args := range [][]string{{"agents", "list", "--json"}, {"agents", "allow", "other.example", "--scope", "PROFILE_READ"}, {"agents", "deny", assistantHost}} {
		out, stderr, err := oauthd(t, rs.db, "", args...)
		t.Logf("oauthd %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr))
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || out != "" || !strings.Contains(stderr, "database") || strings.Contains(stderr, "panic") {
			t.Errorf("oauthd %s with PostgreSQL down: %v, stdout %q, stderr %q; want exit status 1 and a sentence naming the database", strings.Join(args, " "), err, out, stderr)
		}
	}
	select {
	case <-down:
		t.Fatal("PostgreSQL was back before every endpoint was tried: the answers above are not an outage's")
	default:
	}
	<-down
}
