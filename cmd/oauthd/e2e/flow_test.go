package e2e

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
)

// TestFlow is issue 3's end-to-end check: the real `oauthd serve`, a user
// and clients made through the CLI, and golang.org/x/oauth2 as the client,
// through the real login and consent pages: code → tokens (JWT checked
// against the JWKS with jwx) → /v2/me → refresh → /v2/me, refresh-token
// reuse revoking the family, a public client with PKCE, Deny, and HTTP
// Basic client authentication.
func TestFlow(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	scopes := []string{"PROFILE_READ", "BOOKING_READ"}
	id, secret := e.client(t, e2eRedirect, scopes)
	if secret == "" {
		t.Fatal("a confidential client got no secret")
	}

	t.Run("confidential", func(t *testing.T) {
		conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, scopes...)
		verifier := oauth2.GenerateVerifier()
		b := consenttest.New()
		code := e.codeFlow(t, ctx, b, conf, oauth2.S256ChallengeOption(verifier))

		tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		wantScope := strings.Join(scopes, " ")
		if tok.AccessToken == "" || tok.RefreshToken == "" || tok.TokenType != "bearer" ||
			tok.ExpiresIn != 1800 || tok.Extra("scope") != wantScope {
			t.Fatalf("token = type %q, expires_in %d, scope %v, refresh %t; want bearer, 1800, %q and a refresh token",
				tok.TokenType, tok.ExpiresIn, tok.Extra("scope"), tok.RefreshToken != "", wantScope)
		}
		if !strings.HasPrefix(tok.RefreshToken, "oauthd_rt_") && len(tok.RefreshToken) < 32 {
			t.Errorf("refresh token %d characters long; want an opaque random string", len(tok.RefreshToken))
		}

		checkAccessToken(t, ctx, e, tok.AccessToken, id, wantScope)
		e.wantMe(t, tok.AccessToken)

		// Refresh through x/oauth2 (an expired token makes it refresh).
		old := &oauth2.Token{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, Expiry: time.Now().Add(-time.Minute)}
		tok2, err := conf.TokenSource(ctx, old).Token()
		if err != nil {
			t.Fatalf("refresh: %v", err)
		}
		if tok2.AccessToken == tok.AccessToken || tok2.RefreshToken == tok.RefreshToken || tok2.RefreshToken == "" ||
			tok2.Extra("scope") != wantScope {
			t.Fatalf("refresh gave the same tokens or lost the scope: scope %v", tok2.Extra("scope"))
		}
		checkAccessToken(t, ctx, e, tok2.AccessToken, id, wantScope)
		e.wantMe(t, tok2.AccessToken)

		// A direct refresh request: the response exactly as CONTRACT.md.
		r := e.refresh(t, id, secret, tok2.RefreshToken)
		if r.Status != http.StatusOK {
			t.Fatalf("refresh = %d %v", r.Status, r.Body)
		}
		keys := keysOf(r.Body)
		if want := []string{"access_token", "expires_in", "refresh_token", "scope", "token_type"}; !slices.Equal(keys, want) {
			t.Errorf("token response members = %v; want %v", keys, want)
		}
		if r.Body["token_type"] != "bearer" || r.Body["expires_in"] != float64(1800) || r.Body["scope"] != wantScope {
			t.Errorf("token response = %v", r.Body)
		}
		if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("token response Cache-Control = %q; want no-store", cc)
		}
		newest := r.str("refresh_token")
		if newest == tok2.RefreshToken || r.str("access_token") == tok2.AccessToken {
			t.Error("the direct refresh did not rotate the tokens")
		}
		e.wantMe(t, r.str("access_token"))

		// Reusing a rotated refresh token fails and revokes the family
		// (RFC 9700 §4.14.2): the newest refresh token fails too.
		if r := e.refresh(t, id, secret, tok.RefreshToken); r.Status != http.StatusBadRequest || r.Body["error"] != "invalid_grant" {
			t.Errorf("reuse of the first refresh token = %d %v; want 400 invalid_grant", r.Status, r.Body)
		}
		if r := e.refresh(t, id, secret, newest); r.Status != http.StatusBadRequest || r.Body["error"] != "invalid_grant" {
			t.Errorf("newest refresh token after reuse = %d %v; want 400 invalid_grant (family revoked)", r.Status, r.Body)
		}
		if in := e.introspect(t, id, secret, newest); in["active"] != false {
			t.Errorf("introspection of the revoked family's refresh token = %v; want active false", in)
		}
	})

	t.Run("code replay", func(t *testing.T) {
		// The code is single-use; its replay by the client revokes the
		// refresh-token family issued from it (RFC 6749 §4.1.2).
		conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, scopes...)
		verifier := oauth2.GenerateVerifier()
		code := e.codeFlow(t, ctx, consenttest.New(), conf, oauth2.S256ChallengeOption(verifier))
		tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		if _, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier)); oauthErrorCode(err) != "invalid_grant" {
			t.Errorf("second exchange of the code: %v; want invalid_grant", err)
		}
		if r := e.refresh(t, id, secret, tok.RefreshToken); r.Status != http.StatusBadRequest || r.Body["error"] != "invalid_grant" {
			t.Errorf("refresh token of a replayed code = %d %v; want 400 invalid_grant", r.Status, r.Body)
		}
	})

	t.Run("basic auth", func(t *testing.T) {
		conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInHeader, scopes...)
		verifier := oauth2.GenerateVerifier()
		code := e.codeFlow(t, ctx, consenttest.New(), conf, oauth2.S256ChallengeOption(verifier))
		tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("exchange with HTTP Basic: %v", err)
		}
		tok2, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken, Expiry: time.Now().Add(-time.Minute)}).Token()
		if err != nil || tok2.AccessToken == tok.AccessToken {
			t.Fatalf("refresh with HTTP Basic: %v", err)
		}
		e.wantMe(t, tok2.AccessToken)

		// A wrong secret in Basic: 401 invalid_client with WWW-Authenticate.
		r := e2ePost(t, e.tokenURL(), url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok2.RefreshToken}}, id, secret+"x")
		if r.Status != http.StatusUnauthorized || r.Body["error"] != "invalid_client" || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Basic") {
			t.Errorf("wrong Basic secret = %d %v, WWW-Authenticate %q; want 401 invalid_client with a Basic challenge",
				r.Status, r.Body, r.Header.Get("WWW-Authenticate"))
		}
	})

	t.Run("public client", func(t *testing.T) {
		pubID, pubSecret := e.client(t, e2eRedirect, []string{"PROFILE_READ"}, "--public")
		if pubSecret != "" {
			t.Fatal("a public client got a secret")
		}
		conf := e.config(pubID, "", e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
		b := consenttest.New()

		// PKCE is required: no challenge → invalid_request, redirected
		// (the client and redirect URI are valid), before any login.
		state := "no-pkce"
		got, err := b.Authorize(ctx, conf.AuthCodeURL(state), e2eEmail, e2ePassword, true)
		if err != nil {
			t.Fatalf("authorize without PKCE: %v", err)
		}
		if q := got.Query(); q.Get("error") != "invalid_request" || q.Get("state") != state || q.Get("iss") != e.base || q.Get("code") != "" {
			t.Errorf("public client without code_challenge → %s; want error=invalid_request with state and iss", got)
		}

		// A code whose exchange omits the verifier is refused.
		v0 := oauth2.GenerateVerifier()
		code0 := e.codeFlow(t, ctx, b, conf, oauth2.S256ChallengeOption(v0))
		if _, err := conf.Exchange(ctx, code0); !slices.Contains([]string{"invalid_request", "invalid_grant"}, oauthErrorCode(err)) {
			t.Errorf("public exchange without code_verifier: %v; want invalid_request or invalid_grant", err)
		}
		// A wrong verifier is refused.
		v1 := oauth2.GenerateVerifier()
		code1 := e.codeFlow(t, ctx, b, conf, oauth2.S256ChallengeOption(v1))
		if _, err := conf.Exchange(ctx, code1, oauth2.VerifierOption(oauth2.GenerateVerifier())); oauthErrorCode(err) != "invalid_grant" {
			t.Errorf("public exchange with a wrong code_verifier: %v; want invalid_grant", err)
		}

		verifier, _ := consenttest.PKCE()
		code := e.codeFlow(t, ctx, b, conf, oauth2.S256ChallengeOption(verifier))
		tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("public exchange: %v", err)
		}
		if tok.Extra("scope") != "PROFILE_READ" || tok.RefreshToken == "" {
			t.Errorf("public token: scope %v, refresh %t", tok.Extra("scope"), tok.RefreshToken != "")
		}
		checkAccessToken(t, ctx, e, tok.AccessToken, pubID, "PROFILE_READ")
		e.wantMe(t, tok.AccessToken)
		tok2, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken, Expiry: time.Now().Add(-time.Minute)}).Token()
		if err != nil || tok2.RefreshToken == tok.RefreshToken {
			t.Fatalf("public refresh: %v", err)
		}
		e.wantMe(t, tok2.AccessToken)
	})

	t.Run("deny", func(t *testing.T) {
		conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, scopes...)
		verifier := oauth2.GenerateVerifier()
		state := "deny-state"
		got, err := consenttest.New().Authorize(ctx, conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)), e2eEmail, e2ePassword, false)
		if err != nil {
			t.Fatalf("authorize (Deny): %v", err)
		}
		q := got.Query()
		if base := strings.SplitN(got.String(), "?", 2)[0]; base != e2eRedirect ||
			q.Get("error") != "access_denied" || q.Get("state") != state || q.Get("iss") != e.base || q.Has("code") {
			t.Errorf("Deny → %s; want %s?error=access_denied with state %q and iss %q", got, e2eRedirect, state, e.base)
		}
	})
}

// checkAccessToken checks the RFC 9068 access token: verified with jwx
// against the JWKS, typ at+jwt, the kid of the active key, and the claims
// CONTRACT.md lists.
func checkAccessToken(t *testing.T, ctx context.Context, e *e2e, tok, clientID, wantScope string) map[string]any {
	t.Helper()
	claims, hdr := e.verifyJWT(t, ctx, tok)
	if hdr.Type() != "at+jwt" || hdr.Algorithm().String() != "ES256" || hdr.KeyID() == "" {
		t.Errorf("JWT header typ %q alg %q kid %q; want at+jwt, ES256 and a kid", hdr.Type(), hdr.Algorithm(), hdr.KeyID())
	}
	if kid := kidIn(keyStates(t, e.db), "active"); hdr.KeyID() != kid {
		t.Errorf("JWT kid %q; want the active key %q", hdr.KeyID(), kid)
	}
	aud, _ := claims["aud"].([]string)
	iat, _ := claims["iat"].(time.Time)
	exp, _ := claims["exp"].(time.Time)
	jti, _ := claims["jti"].(string)
	if claims["iss"] != e.base || !slices.Equal(aud, []string{e.base}) || claims["sub"] != e2eJSONInt(e.userID) ||
		claims["client_id"] != clientID || claims["scope"] != wantScope || jti == "" {
		t.Errorf("JWT claims = %v; want iss and aud %s, sub %d, client_id %s, scope %q and a jti", claims, e.base, e.userID, clientID, wantScope)
	}
	if d := exp.Sub(iat); d != 1800*time.Second {
		t.Errorf("JWT exp - iat = %v; want 1800s", d)
	}
	if _, ok := claims["unrestricted"]; ok {
		t.Errorf("a scoped client's token carries unrestricted: %v", claims["unrestricted"])
	}
	return claims
}

// oauthErrorCode is the RFC 6749 error code of a failed x/oauth2 call, or
// "" (also when err is nil).
func oauthErrorCode(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return ""
}
