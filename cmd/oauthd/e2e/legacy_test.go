package e2e

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
)

// TestSeedRules checks the seed's rules through the real binary and its
// CLI: secret rotation, a pending client, and a legacy client imported
// unscoped, then migrated with `clients scopes set`.
func TestSeedRules(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()

	t.Run("secret rotation", func(t *testing.T) {
		var c struct {
			ClientID     string `json:"client_id"`
			ClientSecret string `json:"client_secret"`
			SecretID     string `json:"secret_id"`
		}
		oneJSON(t, e.cli(t, "clients", "create", "--owner", e2eEmail, "--name", "Rotating", "--redirect-uri", e2eRedirect,
			"--scope", "PROFILE_READ", "--json"), &c)
		e.cli(t, "clients", "approve", c.ClientID)
		id, s1 := c.ClientID, c.ClientSecret
		conf := e.config(id, s1, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
		code := e.codeFlow(t, ctx, consenttest.New(), conf)
		tok, err := conf.Exchange(ctx, code)
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}

		var gen struct {
			SecretID     string `json:"secret_id"`
			ClientSecret string `json:"client_secret"`
		}
		oneJSON(t, e.cli(t, "clients", "secrets", "generate", id, "--json"), &gen)
		s2 := gen.ClientSecret
		if s2 == "" || s2 == s1 || gen.SecretID == c.SecretID {
			t.Fatalf("secrets generate = %+v", gen)
		}

		// Both secrets work.
		r := e.refresh(t, id, s1, tok.RefreshToken)
		if r.Status != http.StatusOK {
			t.Fatalf("refresh with the old secret = %d %v", r.Status, r.Body)
		}
		r = e.refresh(t, id, s2, r.str("refresh_token"))
		if r.Status != http.StatusOK {
			t.Fatalf("refresh with the new secret = %d %v", r.Status, r.Body)
		}
		rt, at := r.str("refresh_token"), r.str("access_token")

		var secrets []struct {
			SecretID   string     `json:"secret_id"`
			LastUsedAt *time.Time `json:"last_used_at"`
		}
		oneJSON(t, e.cli(t, "clients", "secrets", "list", id, "--json"), &secrets)
		if len(secrets) != 2 {
			t.Fatalf("secrets list = %+v; want 2", secrets)
		}
		for _, s := range secrets {
			if s.LastUsedAt == nil {
				t.Errorf("secret %s has no last_used_at after being used", s.SecretID)
			}
		}

		// Revoke the old one: it fails at once, with 401 invalid_client.
		e.cli(t, "clients", "secrets", "revoke", id, c.SecretID)
		if r := e.refresh(t, id, s1, rt); r.Status != http.StatusUnauthorized || r.Body["error"] != "invalid_client" {
			t.Errorf("refresh with the revoked secret = %d %v; want 401 invalid_client", r.Status, r.Body)
		}
		if r := e2ePost(t, e.introspectURL(), map[string][]string{"token": {at}}, id, s1); r.Status != http.StatusUnauthorized {
			t.Errorf("introspection with the revoked secret = %d %v; want 401", r.Status, r.Body)
		}
		// Tokens issued before still work, with the new secret.
		e.wantMe(t, tok.AccessToken)
		e.wantMe(t, at)
		if r := e.refresh(t, id, s2, rt); r.Status != http.StatusOK {
			t.Errorf("refresh of an earlier refresh token with the new secret = %d %v; want 200", r.Status, r.Body)
		}
		// A confidential client keeps at least one secret.
		if _, errOut, err := oauthd(t, e.db, "", "clients", "secrets", "revoke", id, gen.SecretID); err == nil {
			t.Errorf("revoking the last secret succeeded; want a refusal (stderr %q)", errOut)
		}
	})

	t.Run("pending client", func(t *testing.T) {
		id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"}, "--pending")
		conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
		authURL := conf.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
		wantErrorPage(t, ctx, authURL, "Application not approved yet")
	})

	t.Run("legacy client", func(t *testing.T) {
		const id, secret = "legacy-calendar", "legacy-secret-from-2019-0123456789"
		file := filepath.Join(t.TempDir(), "legacy.json")
		if err := os.WriteFile(file, []byte(`[{"client_id":"`+id+`","name":"Old Calendar","owner":"`+e2eEmail+
			`","redirect_uris":["`+e2eRedirect+`"],"client_secret":"`+secret+`","client_type":"confidential"}]`), 0o600); err != nil {
			t.Fatal(err)
		}
		var ids []string
		oneJSON(t, e.cli(t, "clients", "import", file, "--json"), &ids)
		if !slices.Equal(ids, []string{id}) {
			t.Fatalf("clients import = %v", ids)
		}
		b := consenttest.New()

		// Without scope (as before scopes existed): an unrestricted token.
		conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams)
		tok, err := conf.Exchange(ctx, e.codeFlow(t, ctx, b, conf))
		if err != nil {
			t.Fatalf("legacy exchange: %v", err)
		}
		if s, ok := tok.Extra("scope").(string); ok && s != "" {
			t.Errorf("legacy token response scope = %q; want none", s)
		}
		claims, _ := e.verifyJWT(t, ctx, tok.AccessToken)
		if _, has := claims["scope"]; has || claims["unrestricted"] != true {
			t.Errorf("legacy JWT: scope %v, unrestricted %v; want no scope and unrestricted true", claims["scope"], claims["unrestricted"])
		}
		if in := e.introspect(t, id, secret, tok.AccessToken); in["active"] != true || in["unrestricted"] != true || in["scope"] != nil {
			t.Errorf("legacy token introspection = %v; want active, unrestricted, no scope", in)
		}
		e.wantMe(t, tok.AccessToken)
		legacyRT := tok.RefreshToken

		// With a known scope (the session is kept: one request).
		withScope := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
		tokS, err := withScope.Exchange(ctx, e.codeFlow(t, ctx, b, withScope))
		if err != nil {
			t.Fatalf("legacy exchange with scope: %v", err)
		}
		if c, _ := e.verifyJWT(t, ctx, tokS.AccessToken); c["unrestricted"] != true {
			t.Errorf("legacy token asked with scope before migration: %v; want unrestricted (the client is not migrated)", c)
		}
		// An unknown scope name is refused even for a legacy client.
		bad := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ", "NOT_A_SCOPE")
		if got, err := b.Authorize(ctx, bad.AuthCodeURL("s"), e2eEmail, e2ePassword, true); err != nil || got.Query().Get("error") != "invalid_scope" {
			t.Errorf("legacy client with an unknown scope → %v, %v; want a redirect with invalid_scope", got, err)
		}

		// `clients show` counts requests with and without scope: one per
		// authorization, counted when the consent page is shown (the GET
		// before login is not counted again): one without, two with (the
		// third was refused for its unknown scope, but it came with one).
		var shown struct {
			Legacy   bool `json:"legacy"`
			Requests struct {
				WithScope    int `json:"with_scope"`
				WithoutScope int `json:"without_scope"`
				Days         int `json:"days"`
			} `json:"authorization_requests"`
			MigrationSafe *bool `json:"migration_safe"`
		}
		oneJSON(t, e.cli(t, "clients", "show", id, "--json"), &shown)
		if !shown.Legacy || shown.Requests.WithoutScope != 1 || shown.Requests.WithScope != 2 || shown.Requests.Days != 30 ||
			shown.MigrationSafe == nil || *shown.MigrationSafe {
			t.Errorf("clients show = %+v (migration_safe %v); want legacy, 1 without scope, 2 with, 30 days, migration_safe false",
				shown, shown.MigrationSafe)
		}

		// The migration: refused while migration_safe is false (saying why
		// and how to go on, and changing nothing), done with --force.
		out, errOut, err := oauthd(t, e.db, "", "clients", "scopes", "set", id, "PROFILE_READ")
		if err == nil || out != "" || !strings.Contains(errOut, "1 of its authorization requests of the last 30 days came without a scope parameter") ||
			!strings.Contains(errOut, "Add scope to the client's authorization URL") || !strings.Contains(errOut, "migration_safe: true") ||
			!strings.Contains(errOut, "--force") {
			t.Errorf("clients scopes set on an unsafe legacy client = %v, stdout %q, stderr %q; want a refusal saying why and how", err, out, errOut)
		}
		oneJSON(t, e.cli(t, "clients", "show", id, "--json"), &shown)
		if !shown.Legacy {
			t.Fatal("a refused migration migrated the client")
		}
		e.cli(t, "clients", "scopes", "set", id, "PROFILE_READ", "--force")
		oneJSON(t, e.cli(t, "clients", "show", id, "--json"), &shown)
		if shown.Legacy {
			t.Error("still legacy after clients scopes set")
		}
		// New authorizations with scope: only the requested scope.
		tokM, err := withScope.Exchange(ctx, e.codeFlow(t, ctx, b, withScope))
		if err != nil {
			t.Fatalf("exchange after migration: %v", err)
		}
		if tokM.Extra("scope") != "PROFILE_READ" {
			t.Errorf("token after migration: scope %v; want PROFILE_READ", tokM.Extra("scope"))
		}
		c := checkAccessToken(t, ctx, e, tokM.AccessToken, id, "PROFILE_READ")
		if _, has := c["unrestricted"]; has {
			t.Errorf("token after migration carries unrestricted")
		}
		e.wantMe(t, tokM.AccessToken)
		// The old legacy refresh token keeps working; its access tokens
		// stay unrestricted until the user authorizes again.
		r := e.refresh(t, id, secret, legacyRT)
		if r.Status != http.StatusOK {
			t.Fatalf("legacy refresh token after migration = %d %v; want 200", r.Status, r.Body)
		}
		if c, _ := e.verifyJWT(t, ctx, r.str("access_token")); c["unrestricted"] != true {
			t.Errorf("access token from the old legacy refresh token: %v; want unrestricted", c)
		}
		e.wantMe(t, r.str("access_token"))
		// Without scope the authorization URL now fails: a 400 page.
		wantErrorPage(t, ctx, conf.AuthCodeURL("s"), "Invalid authorization request")
		// A scope outside the client's: invalid_scope by redirect.
		wider := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ", "BOOKING_READ")
		if got, err := b.Authorize(ctx, wider.AuthCodeURL("s"), e2eEmail, e2ePassword, true); err != nil || got.Query().Get("error") != "invalid_scope" {
			t.Errorf("migrated client asking for more than its scopes → %v, %v; want invalid_scope", got, err)
		}
	})
}

// wantErrorPage checks that authURL answers the HTML error page with status
// 400 and the title, and never redirects: neither to the login page nor to
// the client.
func wantErrorPage(t *testing.T, ctx context.Context, authURL, title string) {
	t.Helper()
	_, err := consenttest.New().Authorize(ctx, authURL, e2eEmail, e2ePassword, true)
	var pe *consenttest.PageError
	if !errors.As(err, &pe) || pe.StatusCode != http.StatusBadRequest || pe.Title != title || pe.URL.Path != "/auth/oauth2/authorize" {
		t.Fatalf("authorize → %v; want the 400 page %q", err, title)
	}
	// The same without following anything: 400, HTML, no Location.
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("GET authorize = %d, Location %q, Content-Type %q; want 400 HTML without Location",
			resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("Content-Type"))
	}
}
