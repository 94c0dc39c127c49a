package issuer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"oauthd/data"
	"oauthd/keys/verify/dpoptest"
)

const tkTokenURL = tkIssuer + "/v2/auth/oauth2/token"

// proof signs a token-endpoint proof at the env's clock.
func (env *tkEnv) proof(k *dpoptest.Key) [2]string {
	return [2]string{"DPoP", k.Sign(dpoptest.Claims{HTM: "POST", HTU: tkTokenURL, IAT: env.clock().Unix()}, "dpop+jwt")}
}

// tkJKT returns the cnf.jkt of an access token ("" when none).
func tkJKT(t *testing.T, at string) string {
	t.Helper()
	parts := strings.Split(at, ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Cnf struct {
			JKT string `json:"jkt"`
		} `json:"cnf"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c.Cnf.JKT
}

// TestTokenDPoPPublicClientBinding: a public client's code exchange with a
// proof gets a DPoP token (cnf.jkt) and a refresh token bound to the key:
// a refresh without a proof, or with another key's, is refused and
// changes nothing; with the key it rotates.
func TestTokenDPoPPublicClientBinding(t *testing.T) {
	env := newTkEnv(t)
	k := dpoptest.NewES256()
	code := env.code(tkCodeOpts{client: "pub", challenge: tkChallenge(tkVerifier), scopes: []string{"PROFILE_READ"}})
	tok := env.mustTokens(env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect,
		"client_id", "pub", "code_verifier", tkVerifier), header: [][2]string{env.proof(k)}}))
	if tok.TokenType != "DPoP" || tkJKT(t, tok.AccessToken) != k.JKT() {
		t.Fatalf("token_type %q, cnf.jkt %q; want DPoP, %q", tok.TokenType, tkJKT(t, tok.AccessToken), k.JKT())
	}
	refresh := func(h ...[2]string) *httptest.ResponseRecorder {
		return env.do(tkReq{body: tkForm("grant_type", "refresh_token", "refresh_token", tok.RefreshToken, "client_id", "pub"), header: h})
	}
	if rec := refresh(); rec.Code != http.StatusBadRequest || tkOAuthErr(t, rec) != "invalid_grant" {
		t.Fatalf("refresh without a proof = %d %s", rec.Code, rec.Body)
	}
	if rec := refresh(env.proof(dpoptest.NewEdDSA())); rec.Code != http.StatusBadRequest || tkOAuthErr(t, rec) != "invalid_grant" {
		t.Fatalf("refresh with another key = %d %s", rec.Code, rec.Body)
	}
	next := env.mustTokens(refresh(env.proof(k)))
	if next.TokenType != "DPoP" || tkJKT(t, next.AccessToken) != k.JKT() {
		t.Fatalf("refreshed: %+v", next)
	}
}

// TestTokenDPoPConfidentialUnbound: a confidential client's refresh
// tokens are not bound (its secret binds them); each token request with a
// proof gets a DPoP token, without one a bearer token.
func TestTokenDPoPConfidentialUnbound(t *testing.T) {
	env := newTkEnv(t)
	k := dpoptest.NewES256()
	code := env.code(tkCodeOpts{client: "conf"})
	tok := env.mustTokens(env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code,
		"redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA), header: [][2]string{env.proof(k)}}))
	if tok.TokenType != "DPoP" {
		t.Fatalf("token_type %q", tok.TokenType)
	}
	next := env.mustTokens(env.do(env.refreshReq("conf", env.secretA, tok.RefreshToken)))
	if next.TokenType != "bearer" || tkJKT(t, next.AccessToken) != "" {
		t.Fatalf("refresh without a proof: %+v", next)
	}
}

// TestTokenDPoPProofRefused: bad proofs are invalid_dpop_proof and use
// nothing up (the code still works afterwards).
func TestTokenDPoPProofRefused(t *testing.T) {
	env := newTkEnv(t)
	k := dpoptest.NewES256()
	code := env.code(tkCodeOpts{client: "conf"})
	body := tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)
	now := env.clock().Unix()
	replayed := env.proof(k)
	// Use the proof once (on a refresh that fails for its token).
	env.do(tkReq{body: tkForm("grant_type", "refresh_token", "refresh_token", "oauthd_rt_x", "client_id", "conf", "client_secret", env.secretA), header: [][2]string{replayed}})
	for name, h := range map[string][][2]string{
		"wrong htu":   {{"DPoP", k.Sign(dpoptest.Claims{HTM: "POST", HTU: tkIssuer + "/v2/me", IAT: now}, "dpop+jwt")}},
		"wrong htm":   {{"DPoP", k.Sign(dpoptest.Claims{HTM: "GET", HTU: tkTokenURL, IAT: now}, "dpop+jwt")}},
		"iat too old": {{"DPoP", k.Sign(dpoptest.Claims{HTM: "POST", HTU: tkTokenURL, IAT: now - 120}, "dpop+jwt")}},
		"iat too new": {{"DPoP", k.Sign(dpoptest.Claims{HTM: "POST", HTU: tkTokenURL, IAT: now + 120}, "dpop+jwt")}},
		"replayed":    {replayed},
		"two proofs":  {env.proof(k), env.proof(k)},
		"not a JWT":   {{"DPoP", "nope"}},
		"typ JWT":     {{"DPoP", k.Sign(dpoptest.Claims{HTM: "POST", HTU: tkTokenURL, IAT: now}, "JWT")}},
	} {
		rec := env.do(tkReq{body: body, header: h})
		if rec.Code != http.StatusBadRequest || tkOAuthErr(t, rec) != "invalid_dpop_proof" {
			t.Errorf("%s: %d %s; want 400 invalid_dpop_proof", name, rec.Code, rec.Body)
		}
	}
	env.mustTokens(env.do(tkReq{body: body, header: [][2]string{env.proof(k)}}))
}

// TestTokenDPoPRequiredByClient: dpop_bound_access_tokens refuses a token
// request without a proof.
func TestTokenDPoPRequiredByClient(t *testing.T) {
	env := newTkEnv(t)
	if _, err := env.store.UpdateClient(context.Background(), "conf", func(c data.Client) (data.Client, error) {
		c.DPoPBoundAccessTokens = true
		return c, nil
	}); err != nil {
		t.Fatal(err)
	}
	code := env.code(tkCodeOpts{client: "conf"})
	body := tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)
	if rec := env.do(tkReq{body: body}); rec.Code != http.StatusBadRequest || tkOAuthErr(t, rec) != "invalid_dpop_proof" {
		t.Fatalf("no proof: %d %s", rec.Code, rec.Body)
	}
	env.advance(time.Second)
	if tok := env.mustTokens(env.do(tkReq{body: body, header: [][2]string{env.proof(dpoptest.NewEdDSA())}})); tok.TokenType != "DPoP" {
		t.Fatalf("with a proof: %+v", tok)
	}
}
