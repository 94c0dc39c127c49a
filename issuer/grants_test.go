package issuer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"oauthd/data"
	"oauthd/keys/verify"
	"oauthd/keys/verify/dpoptest"
)

// TestGrantTableMatchesData: the table of grants has a row for each grant
// type a client record may list, and only those; the metadata and the
// metric labels read it.
func TestGrantTableMatchesData(t *testing.T) {
	if got := grantTypesSupported(); !slices.Equal(got, data.GrantTypes) {
		t.Fatalf("table of grants = %v; data.GrantTypes = %v", got, data.GrantTypes)
	}
	env := newTkEnv(t)
	rec := env.do(tkReq{method: http.MethodGet, path: "/.well-known/oauth-authorization-server", ct: "none"})
	var m struct {
		GrantTypes []string `json:"grant_types_supported"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.GrantTypes, data.GrantTypes) {
		t.Errorf("grant_types_supported = %v; want %v", m.GrantTypes, data.GrantTypes)
	}
	for gt, want := range map[string]string{
		data.GrantAuthorizationCode: "authorization_code", data.GrantClientCredentials: "client_credentials",
		"": "none", "password": "other", "urn:x:" + strings.Repeat("a", 300): "other",
	} {
		if got := grantLabel(gt); got != want {
			t.Errorf("grantLabel(%.20q) = %q; want %q", gt, got, want)
		}
	}
}

// ccEnv is a token environment with a client allowed only the
// client_credentials grant ("machine", secret env.secretA).
func ccEnv(t *testing.T) *tkEnv {
	env := newTkEnv(t)
	c := data.Client{ID: "machine", Name: "Sync job", OwnerID: 1, Type: data.Confidential,
		Scopes: []string{"BOOKING_READ", "EVENT_TYPE_READ", "openid"}, Status: data.StatusApproved,
		GrantTypes: []string{data.GrantClientCredentials},
		Secrets:    []data.ClientSecret{{ID: "cs_m", Hash: data.Hash(env.secretA), CreatedAt: tkT0}},
		CreatedAt:  tkT0, UpdatedAt: tkT0}
	if err := env.store.CreateClient(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return env
}

func ccReq(env *tkEnv, client, secret string, kv ...string) tkReq {
	return tkReq{body: tkForm(append([]string{"grant_type", "client_credentials"}, kv...)...),
		header: [][2]string{tkBasic(client, secret)}}
}

// TestGrantNotAllowed: every grant a client is not allowed is
// unauthorized_client (RFC 6749 §5.2), before any grant is used.
func TestGrantNotAllowed(t *testing.T) {
	env := ccEnv(t)
	code := env.code(tkCodeOpts{client: "conf"})
	rt := env.exchange().RefreshToken
	tests := []struct {
		name string
		req  tkReq
	}{
		{"client_credentials of a default client", ccReq(env, "conf", env.secretA)},
		{"client_credentials of a public client", tkReq{body: tkForm("grant_type", "client_credentials", "client_id", "pub")}},
		{"client_credentials of a legacy client", ccReq(env, "legacy", env.legacySecret)},
		{"authorization_code of a machine", ccReq(env, "machine", env.secretA, "grant_type", "authorization_code")},
		{"refresh_token of a machine", tkReq{body: tkForm("grant_type", "refresh_token", "refresh_token", rt),
			header: [][2]string{tkBasic("machine", env.secretA)}}},
	}
	tests[3].req.body = tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := env.do(tc.req)
			if rec.Code != http.StatusBadRequest || tkOAuthErr(t, rec) != "unauthorized_client" {
				t.Fatalf("%d %s; want 400 unauthorized_client", rec.Code, rec.Body)
			}
		})
	}
	// The code was not spent by the refused request.
	env.mustTokens(env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code,
		"redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)}))
}

// TestClientCredentials: RFC 6749 §4.4 with a token whose sub is the
// client ID and that names no user or grant (RFC 9068 §2.2).
func TestClientCredentials(t *testing.T) {
	env := ccEnv(t)
	rec := env.do(ccReq(env, "machine", env.secretA))
	var raw map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil || rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if _, ok := raw["refresh_token"]; ok {
		t.Errorf("response has a refresh_token (RFC 6749 §4.4.3: none): %v", raw)
	}
	// openid is left out of the default: it names a user.
	if raw["scope"] != "BOOKING_READ EVENT_TYPE_READ" || raw["token_type"] != "bearer" {
		t.Errorf("response = %v", raw)
	}
	at := raw["access_token"].(string)
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(at, ".")[1])
	var claims map[string]any
	_ = json.Unmarshal(payload, &claims)
	if claims["sub"] != "machine" || claims["client_id"] != "machine" {
		t.Errorf("claims = %v; want sub = client_id = machine", claims)
	}
	if _, ok := claims["grant_id"]; ok {
		t.Errorf("claims carry a grant_id: %v", claims)
	}
	vc, err := env.s.cfg.Verifier.Verify(context.Background(), at)
	if err != nil || vc.HasUser() {
		t.Fatalf("verify = %+v, %v; want a token without a user", vc, err)
	}

	// Scopes: a subset of the client's; none outside; never openid.
	tok := env.mustTokens(env.do(ccReq(env, "machine", env.secretA, "scope", "EVENT_TYPE_READ")))
	if tok.Scope != "EVENT_TYPE_READ" {
		t.Errorf("scope = %q; want EVENT_TYPE_READ", tok.Scope)
	}
	for _, sc := range []string{"PROFILE_READ", "openid", "BOOKING_READ NOPE"} {
		if rec := env.do(ccReq(env, "machine", env.secretA, "scope", sc)); tkOAuthErr(t, rec) != "invalid_scope" {
			t.Errorf("scope %q: %d %s; want invalid_scope", sc, rec.Code, rec.Body)
		}
	}

	// Introspection says whose token it is: the client's, no user.
	rec = env.do(tkReq{path: "/v2/auth/oauth2/introspect", body: tkForm("token", at), header: [][2]string{tkBasic("machine", env.secretA)}})
	var in map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &in)
	if in["active"] != true || in["sub"] != "machine" || in["client_id"] != "machine" {
		t.Errorf("introspection = %v", in)
	}

	// A wrong secret, the revocation of the secret and the rejection of
	// the client stop new tokens at once.
	if rec := env.do(ccReq(env, "machine", env.secretB)); tkOAuthErr(t, rec) != "invalid_client" {
		t.Errorf("wrong secret: %d %s", rec.Code, rec.Body)
	}
	for _, change := range []func(*data.Client){
		func(c *data.Client) {
			c.Secrets = []data.ClientSecret{{ID: "cs_n", Hash: data.Hash(env.secretB), CreatedAt: tkT0}}
		},
		func(c *data.Client) { c.Status, c.RejectReason = data.StatusRejected, "abuse" },
	} {
		if _, err := env.store.UpdateClient(context.Background(), "machine", func(c data.Client) (data.Client, error) {
			change(&c)
			return c, nil
		}); err != nil {
			t.Fatal(err)
		}
		if rec := env.do(ccReq(env, "machine", env.secretA)); tkOAuthErr(t, rec) != "invalid_client" {
			t.Errorf("after the change: %d %s; want invalid_client", rec.Code, rec.Body)
		}
	}
	if rec := env.do(ccReq(env, "machine", env.secretB)); tkOAuthErr(t, rec) != "invalid_client" {
		t.Errorf("rejected client, new secret: %d %s; want invalid_client", rec.Code, rec.Body)
	}
	if !strings.Contains(env.logs.String(), `"event":"client_credentials","client_id":"machine","subject":"client"`) {
		t.Errorf("no audit record of the grant saying subject=client: %s", env.logs)
	}
}

// TestMachineTokenMe: /v2/me and userinfo say plainly that a
// client_credentials token names no user.
func TestMachineTokenMe(t *testing.T) {
	for _, path := range []string{"/v2/me", userinfoPath} {
		claims := &verify.Claims{Subject: "conf", ClientID: "conf", Scopes: []string{"PROFILE_READ", "openid"}}
		e := meRouter(t, &claims)
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer x")
		e.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `"error":"insufficient_scope"`) ||
			!strings.Contains(rec.Body.String(), "acts for no user") || !strings.Contains(rec.Header().Get("WWW-Authenticate"), "insufficient_scope") {
			t.Errorf("%s: %d %s; want 403 insufficient_scope saying the token acts for no user", path, rec.Code, rec.Body)
		}
	}
}

// TestClientCredentialsLibrary: golang.org/x/oauth2/clientcredentials
// gets a token, with the secret by HTTP Basic and in the body.
func TestClientCredentialsLibrary(t *testing.T) {
	env := ccEnv(t)
	srv := httptest.NewServer(env.e)
	t.Cleanup(srv.Close)
	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams} {
		cfg := clientcredentials.Config{ClientID: "machine", ClientSecret: env.secretA, TokenURL: srv.URL + tokenEndpointPath,
			Scopes: []string{"BOOKING_READ"}, AuthStyle: style}
		tok, err := cfg.Token(context.Background())
		if err != nil {
			t.Fatalf("auth style %d: %v", style, err)
		}
		if tok.RefreshToken != "" || tok.Extra("scope") != "BOOKING_READ" {
			t.Errorf("token = %+v (scope %v)", tok, tok.Extra("scope"))
		}
		vc, err := env.s.cfg.Verifier.Verify(context.Background(), tok.AccessToken)
		if err != nil || vc.Subject != "machine" || vc.HasUser() {
			t.Errorf("verified = %+v, %v", vc, err)
		}
	}
	bad := clientcredentials.Config{ClientID: "machine", ClientSecret: "wrong", TokenURL: srv.URL + tokenEndpointPath}
	var re *oauth2.RetrieveError
	if _, err := bad.Token(context.Background()); !errors.As(err, &re) || re.ErrorCode != "invalid_client" {
		t.Errorf("wrong secret: %v; want invalid_client", err)
	}
}

// TestClientCredentialsDPoP: a DPoP-bound client's client_credentials
// token is bound to the proof's key; without a proof it gets none, and a
// replayed proof is refused.
func TestClientCredentialsDPoP(t *testing.T) {
	env := ccEnv(t)
	if _, err := env.store.UpdateClient(context.Background(), "machine", func(c data.Client) (data.Client, error) {
		c.DPoPBoundAccessTokens = true
		return c, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := tkOAuthErr(t, env.do(ccReq(env, "machine", env.secretA))); got != "invalid_dpop_proof" {
		t.Errorf("no proof: %s; want invalid_dpop_proof", got)
	}
	key := dpoptest.NewES256()
	req := ccReq(env, "machine", env.secretA)
	req.header = append(req.header, env.proof(key))
	rec := env.do(req)
	var raw map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil || rec.Code != 200 || raw["token_type"] != "DPoP" {
		t.Fatalf("with a proof: %d %s", rec.Code, rec.Body)
	}
	vc, err := env.s.cfg.Verifier.Verify(context.Background(), raw["access_token"].(string))
	if err != nil || vc.JKT != key.JKT() {
		t.Errorf("verified = %+v, %v; want cnf.jkt of the proof's key", vc, err)
	}
	if got := tkOAuthErr(t, env.do(req)); got != "invalid_dpop_proof" {
		t.Errorf("replayed proof: %s; want invalid_dpop_proof", got)
	}
}

// TestGrantRequiredParams: a grant's required parameter (the table of
// grants, grant.params) missing or empty is invalid_request naming it,
// whether the body is a form or JSON: the table's check is the only one
// (the grants' handlers do not check them again).
func TestGrantRequiredParams(t *testing.T) {
	env := newTkEnv(t)
	code := env.code(tkCodeOpts{client: "conf"})
	rt := env.exchange().RefreshToken
	full := map[string]map[string]string{
		"authorization_code": {"code": code, "redirect_uri": tkRedirect},
		"refresh_token":      {"refresh_token": rt},
	}
	for gt, params := range full {
		for missing := range params {
			for _, empty := range []bool{false, true} {
				for _, isJSON := range []bool{false, true} {
					name := gt + "/" + missing + map[bool]string{false: "/absent", true: "/empty"}[empty] + map[bool]string{false: "/form", true: "/json"}[isJSON]
					t.Run(name, func(t *testing.T) {
						p := map[string]string{"grant_type": gt, "client_id": "conf", "client_secret": env.secretA}
						for k, v := range params {
							p[k] = v
						}
						delete(p, missing)
						if empty {
							p[missing] = ""
						}
						var r tkReq
						if isJSON {
							b, err := json.Marshal(p)
							if err != nil {
								t.Fatal(err)
							}
							r = tkReq{ct: "application/json", body: string(b)}
						} else {
							var kv []string
							for k, v := range p {
								kv = append(kv, k, v)
							}
							r = tkReq{body: tkForm(kv...)}
						}
						rec := env.do(r)
						if rec.Code != http.StatusBadRequest {
							t.Errorf("status = %d; want 400 (body %s)", rec.Code, rec.Body)
						}
						var body struct {
							Error string `json:"error"`
							Desc  string `json:"error_description"`
						}
						if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
							t.Fatalf("body %q: %v", rec.Body, err)
						}
						if body.Error != "invalid_request" || body.Desc != missing+" is required" {
							t.Errorf("error = %q %q; want invalid_request %q", body.Error, body.Desc, missing+" is required")
						}
					})
				}
			}
		}
	}
}

// TestReviewedScopes: the scopes a client asks for itself (the
// client_credentials grant, the device authorization request), one table
// for both.
func TestReviewedScopes(t *testing.T) {
	c := data.Client{Scopes: []string{"openid", "PROFILE_READ", "EVENT_TYPE_READ"}}
	onlyOpenID := data.Client{Scopes: []string{"openid"}}
	tests := []struct {
		name     string
		client   data.Client
		raw      string
		userless bool
		want     []string
		wantErr  string // error_description; "" for none
	}{
		{"default: all reviewed", c, "", false, []string{"openid", "PROFILE_READ", "EVENT_TYPE_READ"}, ""},
		{"default without a user: no openid", c, "", true, []string{"PROFILE_READ", "EVENT_TYPE_READ"}, ""},
		{"asked within", c, "PROFILE_READ", true, []string{"PROFILE_READ"}, ""},
		{"asked openid with a user", c, "openid", false, []string{"openid"}, ""},
		{"asked openid without a user", c, "openid PROFILE_READ", true, nil, "openid needs a user; a client_credentials token has none"},
		{"asked outside", c, "BOOKING_WRITE", false, nil, "BOOKING_WRITE is not among the client's approved scopes"},
		{"unknown", c, "ROOT", true, nil, "scope names an unknown scope"},
		{"none left without a user", onlyOpenID, "", true, nil, "the client has no approved scope a token without a user can carry"},
		{"none at all", data.Client{}, "", false, nil, "the client has no approved scope"},
		{"legacy", data.Client{Legacy: true}, "PROFILE_READ", false, nil, "a legacy client has no reviewed scopes; migrate it to scopes first"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, e := reviewedScopes(tc.client, tc.raw, tc.userless)
			gotErr := ""
			if e != nil {
				gotErr = e.Description
			}
			if gotErr != tc.wantErr || !slices.Equal(got, tc.want) {
				t.Errorf("reviewedScopes(%q, userless %v) = %q, %q; want %q, %q", tc.raw, tc.userless, got, gotErr, tc.want, tc.wantErr)
			}
		})
	}
}
