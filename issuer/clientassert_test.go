package issuer

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"oauthd/data"
	"oauthd/data/netsafe"
	"oauthd/keys/verify"
)

// pkEnv is a token environment with a private_key_jwt client "signer"
// (inline JWK set, kid k1, allowed client_credentials and the defaults).
type pkEnv struct {
	*tkEnv
	key  *ecdsa.PrivateKey
	jwks string
}

func publicJWKS(t *testing.T, kid string, key any) string {
	t.Helper()
	k, err := jwk.FromRaw(key)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := jwk.PublicKeyOf(k)
	_ = pub.Set(jwk.KeyIDKey, kid)
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	b, _ := json.Marshal(set)
	return string(b)
}

func newPKEnv(t *testing.T, mutate ...func(*Config)) *pkEnv {
	env := &pkEnv{tkEnv: newTkEnv(t, mutate...)}
	env.key, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	env.jwks = publicJWKS(t, "k1", env.key)
	c := data.Client{ID: "signer", Name: "Keyed backend", OwnerID: 1, Type: data.Confidential,
		Scopes: []string{"BOOKING_READ"}, Status: data.StatusApproved, RedirectURIs: []string{tkRedirect},
		GrantTypes: []string{data.GrantAuthorizationCode, data.GrantRefreshToken, data.GrantClientCredentials},
		JWKS:       env.jwks, CreatedAt: tkT0, UpdatedAt: tkT0}
	if err := env.store.CreateClient(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return env
}

// assertion signs claims with method and key (the header kid k1 unless
// kid says otherwise; "-" for none).
func assertion(t *testing.T, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "-" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (env *pkEnv) claims(mutate ...func(jwt.MapClaims)) jwt.MapClaims {
	now := env.clock()
	c := jwt.MapClaims{"iss": "signer", "sub": "signer", "aud": tkIssuer + tokenEndpointPath,
		"exp": now.Add(time.Minute).Unix(), "iat": now.Unix(), "jti": newAccessTokenID()}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func (env *pkEnv) signed(mutate ...func(jwt.MapClaims)) string {
	return assertion(env.t.(*testing.T), jwt.SigningMethodES256, env.key, "k1", env.claims(mutate...))
}

func pkReq(path, assertion string, kv ...string) tkReq {
	kv = append(kv, "client_assertion_type", verify.AssertionType, "client_assertion", assertion)
	return tkReq{path: path, body: tkForm(kv...)}
}

// TestPrivateKeyJWTRules: every assertion rule of RFC 7523 §3 is
// invalid_client, and a valid assertion passes once.
func TestPrivateKeyJWTRules(t *testing.T) {
	env := newPKEnv(t)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pubDER, _ := x509.MarshalPKIXPublicKey(&env.key.PublicKey)
	replayed := env.signed()
	env.mustTokens(env.do(pkReq("", replayed, "grant_type", "client_credentials")))
	tests := []struct {
		name      string
		assertion string
		extra     []string
		want      string
	}{
		{"wrong aud", env.signed(func(c jwt.MapClaims) { c["aud"] = "https://other.example.com" }), nil, "invalid_client"},
		{"expired", env.signed(func(c jwt.MapClaims) { c["exp"] = env.clock().Add(-2 * time.Minute).Unix() }), nil, "invalid_client"},
		{"no exp", env.signed(func(c jwt.MapClaims) { delete(c, "exp") }), nil, "invalid_client"},
		{"exp too far", env.signed(func(c jwt.MapClaims) { c["exp"] = env.clock().Add(time.Hour).Unix() }), nil, "invalid_client"},
		{"replayed jti", replayed, nil, "invalid_client"},
		{"no jti", env.signed(func(c jwt.MapClaims) { delete(c, "jti") }), nil, "invalid_client"},
		{"iss is not sub", env.signed(func(c jwt.MapClaims) { c["sub"] = "conf" }), nil, "invalid_client"},
		{"sub and iss of another client", env.signed(func(c jwt.MapClaims) { c["sub"], c["iss"] = "conf", "conf" }), nil, "invalid_client"},
		{"unknown kid", assertion(t, jwt.SigningMethodES256, env.key, "k2", env.claims()), nil, "invalid_client"},
		{"another key", assertion(t, jwt.SigningMethodES256, other, "k1", env.claims()), nil, "invalid_client"},
		{"alg none", assertion(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "k1", env.claims()), nil, "invalid_client"},
		{"HS256 with the public key as secret", assertion(t, jwt.SigningMethodHS256, pubDER, "k1", env.claims()), nil, "invalid_client"},
		{"HS256 with the JWKS as secret", assertion(t, jwt.SigningMethodHS256, []byte(env.jwks), "k1", env.claims()), nil, "invalid_client"},
		{"not a JWT", "abc", nil, "invalid_client"},
		{"client_id differs", env.signed(), []string{"client_id", "conf"}, "invalid_client"},
		{"assertion and a secret", env.signed(), []string{"client_secret", "x"}, "invalid_request"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := pkReq("", tc.assertion, append([]string{"grant_type", "client_credentials"}, tc.extra...)...)
			req.remote = fmt.Sprintf("192.0.2.%d:1234", i+1) // each case its own failure budget
			rec := env.do(req)
			if got := tkOAuthErr(t, rec); got != tc.want {
				t.Fatalf("%d %s; want %s", rec.Code, rec.Body, tc.want)
			}
		})
	}
	t.Run("wrong assertion type", func(t *testing.T) {
		rec := env.do(tkReq{body: tkForm("grant_type", "client_credentials", "client_assertion_type", "urn:x", "client_assertion", env.signed())})
		if got := tkOAuthErr(t, rec); got != "invalid_request" {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	})
	t.Run("a keyed client never authenticates with a secret", func(t *testing.T) {
		rec := env.do(tkReq{body: tkForm("grant_type", "client_credentials"), header: [][2]string{tkBasic("signer", env.secretA)}, remote: "198.51.100.1:1"})
		if got := tkOAuthErr(t, rec); got != "invalid_client" {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	})
	t.Run("a secret client cannot use an assertion", func(t *testing.T) {
		req := pkReq("", env.signed(func(c jwt.MapClaims) { c["iss"], c["sub"] = "conf", "conf" }), "grant_type", "client_credentials")
		req.remote = "198.51.100.2:1"
		rec := env.do(req)
		if got := tkOAuthErr(t, rec); got != "invalid_client" {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	})
	t.Run("a forged assertion burns no jti", func(t *testing.T) {
		jti := "chosen-jti"
		forged := assertion(t, jwt.SigningMethodES256, other, "k1", env.claims(func(c jwt.MapClaims) { c["jti"] = jti }))
		req := pkReq("", forged, "grant_type", "client_credentials")
		req.remote = "198.51.100.3:1"
		if got := tkOAuthErr(t, env.do(req)); got != "invalid_client" {
			t.Fatalf("forged: %s", got)
		}
		env.mustTokens(env.do(pkReq("", env.signed(func(c jwt.MapClaims) { c["jti"] = jti }), "grant_type", "client_credentials")))
	})
	t.Run("aud may be the issuer", func(t *testing.T) {
		env.mustTokens(env.do(pkReq("", env.signed(func(c jwt.MapClaims) { c["aud"] = tkIssuer }), "grant_type", "client_credentials")))
	})
}

// TestPrivateKeyJWTEndpoints: the PAR, revocation and introspection
// endpoints take the assertion too (aud: the endpoint's URL).
func TestPrivateKeyJWTEndpoints(t *testing.T) {
	env := newPKEnv(t)
	at := env.mustTokens(env.do(pkReq("", env.signed(), "grant_type", "client_credentials"))).AccessToken
	for _, path := range []string{"/v2/auth/oauth2/introspect", parPath} {
		kv := []string{"token", at}
		if path == parPath {
			kv = []string{"response_type", "code", "redirect_uri", tkRedirect, "scope", "BOOKING_READ",
				"code_challenge", tkChallenge(tkVerifier), "code_challenge_method", "S256"}
		}
		rec := env.do(pkReq(path, env.signed(func(c jwt.MapClaims) { c["aud"] = tkIssuer + path }), kv...))
		if rec.Code != http.StatusOK && rec.Code != http.StatusCreated {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
		if path == "/v2/auth/oauth2/introspect" && !strings.Contains(rec.Body.String(), `"active":true`) {
			t.Errorf("introspection: %s", rec.Body)
		}
	}
}

// TestPrivateKeyJWTURI: keys at a jwks_uri, fetched through netsafe
// (here allowed to reach the loopback test server), cached, refetched for
// a new kid; the default fetcher refuses a loopback jwks_uri.
func TestPrivateKeyJWTURI(t *testing.T) {
	var fetches int
	var doc string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches++
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Write([]byte(doc))
	}))
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	env := newPKEnv(t, func(c *Config) {
		c.Fetcher = netsafe.New(netsafe.Options{AllowPrivate: true, TLS: &tls.Config{RootCAs: pool}})
	})
	doc = env.jwks
	mk := func(id, uri string) {
		c := data.Client{ID: id, Name: "URI backend", OwnerID: 1, Type: data.Confidential, Scopes: []string{"BOOKING_READ"},
			Status: data.StatusApproved, GrantTypes: []string{data.GrantClientCredentials}, JWKSURI: uri, CreatedAt: tkT0, UpdatedAt: tkT0}
		if err := env.store.CreateClient(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	mk("uri", srv.URL+"/jwks")
	as := func(kid string, key any) string {
		return assertion(t, jwt.SigningMethodES256, key, kid, env.claims(func(c jwt.MapClaims) { c["iss"], c["sub"] = "uri", "uri" }))
	}
	env.mustTokens(env.do(pkReq("", as("k1", env.key), "grant_type", "client_credentials")))
	env.mustTokens(env.do(pkReq("", as("k1", env.key), "grant_type", "client_credentials")))
	if fetches != 1 {
		t.Errorf("fetches = %d; want 1 (cached)", fetches)
	}
	// The client rotates to k2: an unknown kid refetches (after the
	// minimum interval).
	k2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	doc = publicJWKS(t, "k2", k2)
	env.advance(jwksRefetch + time.Second)
	env.mustTokens(env.do(pkReq("", as("k2", k2), "grant_type", "client_credentials")))
	if fetches != 2 {
		t.Errorf("fetches = %d; want 2 (refetched for the new kid)", fetches)
	}

	// The default fetcher: loopback is not a public address.
	env2 := newPKEnv(t)
	c := data.Client{ID: "uri", Name: "URI backend", OwnerID: 1, Type: data.Confidential, Scopes: []string{"BOOKING_READ"},
		Status: data.StatusApproved, GrantTypes: []string{data.GrantClientCredentials}, JWKSURI: srv.URL + "/jwks", CreatedAt: tkT0, UpdatedAt: tkT0}
	_ = env2.store.CreateClient(context.Background(), c)
	before := fetches
	rec := env2.do(pkReq("", assertion(t, jwt.SigningMethodES256, k2, "k2", env2.claims(func(c jwt.MapClaims) { c["iss"], c["sub"] = "uri", "uri" })), "grant_type", "client_credentials"))
	if tkOAuthErr(t, rec) != "invalid_client" || fetches != before || !strings.Contains(rec.Body.String(), "jwks_uri could not be fetched") {
		t.Errorf("loopback jwks_uri with the default fetcher: %d %s (fetches %d→%d)", rec.Code, rec.Body, before, fetches)
	}
}

// TestPrivateKeyJWTRevoke: a keyed client revokes its refresh token with
// an assertion; a client_credentials access token has no grant to revoke,
// and the answer says so.
func TestPrivateKeyJWTRevoke(t *testing.T) {
	env := newPKEnv(t)
	at := env.mustTokens(env.do(pkReq("", env.signed(), "grant_type", "client_credentials"))).AccessToken
	rec := env.do(pkReq("/v2/auth/oauth2/revoke", env.signed(), "token", at))
	if tkOAuthErr(t, rec) != "unsupported_token_type" || !strings.Contains(rec.Body.String(), "client_credentials") {
		t.Errorf("revoke a client_credentials token: %d %s", rec.Code, rec.Body)
	}
	code := env.code(tkCodeOpts{client: "signer"})
	rt := env.mustTokens(env.do(pkReq("", env.signed(), "grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect))).RefreshToken
	if rec := env.do(pkReq("/v2/auth/oauth2/revoke", env.signed(), "token", rt)); rec.Code != http.StatusOK {
		t.Fatalf("revoke refresh token: %d %s", rec.Code, rec.Body)
	}
	if got := tkOAuthErr(t, env.do(pkReq("", env.signed(), "grant_type", "refresh_token", "refresh_token", rt))); got != "invalid_grant" {
		t.Errorf("refresh after revocation: %s; want invalid_grant", got)
	}
}

// TestPrivateKeyJWTFailureLimit: bad assertions count in the token
// endpoint's failure limiter like wrong secrets: once (client, address)
// has used its budget the answer is 429 without verifying anything; the
// same client from another address is not locked out.
func TestPrivateKeyJWTFailureLimit(t *testing.T) {
	env := newPKEnv(t)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	limited := false
	for i := 0; i < 40 && !limited; i++ {
		req := pkReq("", assertion(t, jwt.SigningMethodES256, other, "k1", env.claims()), "grant_type", "client_credentials")
		req.remote = "203.0.113.9:1"
		rec := env.do(req)
		limited = rec.Code == http.StatusTooManyRequests
	}
	if !limited {
		t.Fatal("40 forged assertions from one address were never limited")
	}
	good := pkReq("", env.signed(), "grant_type", "client_credentials")
	good.remote = "203.0.113.9:1"
	if rec := env.do(good); rec.Code != http.StatusTooManyRequests {
		t.Errorf("a good assertion from the limited address = %d; want 429 (the limit is no oracle)", rec.Code)
	}
	good = pkReq("", env.signed(), "grant_type", "client_credentials")
	good.remote = "198.51.100.77:1"
	env.mustTokens(env.do(good))
}
