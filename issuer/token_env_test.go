package issuer

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"oauthd/data"
	"oauthd/data/memory"
	"oauthd/keys/verify"
)

const (
	tkIssuer   = "https://api.example.com"
	tkRedirect = "https://app.example.com/cb"
	tkUser     = int64(7)
	tkVerifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
)

var tkT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// tkSigner signs with a real ES256 key, as *keys.Manager does: header typ
// at+jwt and kid.
type tkSigner struct {
	key *ecdsa.PrivateKey
	kid string
}

func (s *tkSigner) Sign(claims jwt.Claims) (string, error) { return s.signed(claims, "at+jwt") }

// signed is claims as an ES256 JWS with the header typ and the signer's
// kid: as golang-jwt's ES256, with the low S of the pair (r, s), (r, n − s)
// that keys/verify requires.
func (s *tkSigner) signed(claims jwt.Claims, typ string) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	t.Header["typ"] = typ
	t.Header["kid"] = s.kid
	input, err := t.SigningString()
	if err != nil {
		return "", err
	}
	d := sha256.Sum256([]byte(input))
	r, sv, err := ecdsa.Sign(rand.Reader, s.key, d[:])
	if err != nil {
		return "", err
	}
	if n := elliptic.P256().Params().N; sv.Cmp(tkHalfN) > 0 {
		sv.Sub(n, sv)
	}
	var sig [64]byte
	r.FillBytes(sig[:32])
	sv.FillBytes(sig[32:])
	return input + "." + base64.RawURLEncoding.EncodeToString(sig[:]), nil
}

var tkHalfN = new(big.Int).Rsh(elliptic.P256().Params().N, 1)

// Key implements verify.KeySource.
func (s *tkSigner) Key(_ context.Context, kid string) (crypto.PublicKey, string, error) {
	if kid != s.kid {
		return nil, "", fmt.Errorf("kid %q: %w", kid, verify.ErrUnknownKey)
	}
	return &s.key.PublicKey, verify.ES256, nil
}

// tkEnv is a Server with its Echo router over a memory store, a real ES256
// signer and verifier, and a fixed clock the test moves.
type tkEnv struct {
	t      testing.TB
	s      *Server
	e      *echo.Echo
	store  *memory.Store
	signer *tkSigner
	reg    *prometheus.Registry
	logs   *tkSyncBuffer

	mu  sync.Mutex
	now time.Time

	// Secrets of the seeded clients.
	secretA, secretB, otherSecret, legacySecret string
}

type tkSyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *tkSyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *tkSyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (env *tkEnv) clock() time.Time {
	env.mu.Lock()
	defer env.mu.Unlock()
	return env.now
}

func (env *tkEnv) advance(d time.Duration) {
	env.mu.Lock()
	defer env.mu.Unlock()
	env.now = env.now.Add(d)
}

func newTkEnv(t testing.TB, mutate ...func(*Config)) *tkEnv {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	env := &tkEnv{
		t:      t,
		store:  memory.New(),
		signer: &tkSigner{key: key, kid: "test-kid"},
		reg:    prometheus.NewRegistry(),
		logs:   &tkSyncBuffer{},
		now:    tkT0,
	}
	t.Cleanup(func() { env.store.Close() })
	v, err := verify.New(verify.Config{Issuer: tkIssuer, Keys: env.signer, Now: env.clock})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(env.logs, nil))
	cfg := Config{
		Store:      env.store,
		Signer:     env.signer,
		Verifier:   v,
		MeAuth:     func(next echo.HandlerFunc) echo.HandlerFunc { return next },
		Logger:     logger,
		Now:        env.clock,
		Registerer: env.reg,
		Issuer:     tkIssuer,
		AppURL:     "https://app.example.com",
	}
	for _, m := range mutate {
		m(&cfg)
	}
	env.s, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	env.e = echo.New()
	env.e.HTTPErrorHandler = HTTPErrorHandler(logger, nil)
	env.s.Register(env.e)

	env.secretA = data.NewSecret(data.PrefixClientSecret)
	env.secretB = data.NewSecret(data.PrefixClientSecret)
	env.otherSecret = data.NewSecret(data.PrefixClientSecret)
	env.legacySecret = data.NewSecret(data.PrefixClientSecret)
	sec := func(id, s string) data.ClientSecret {
		return data.ClientSecret{ID: id, Hash: data.Hash(s), CreatedAt: tkT0}
	}
	clients := []data.Client{
		{ID: "conf", Type: data.Confidential, Scopes: []string{"PROFILE_READ", "BOOKING_READ", "EVENT_TYPE_READ"},
			Status: data.StatusApproved, Secrets: []data.ClientSecret{sec("cs_a", env.secretA), sec("cs_b", env.secretB)}},
		{ID: "other", Type: data.Confidential, Scopes: []string{"PROFILE_READ"},
			Status: data.StatusApproved, Secrets: []data.ClientSecret{sec("cs_o", env.otherSecret)}},
		{ID: "pub", Type: data.Public, Scopes: []string{"PROFILE_READ"}, Status: data.StatusApproved},
		{ID: "pending", Type: data.Confidential, Scopes: []string{"PROFILE_READ"},
			Status: data.StatusPending, Secrets: []data.ClientSecret{sec("cs_p", env.secretA)}},
		{ID: "legacy", Type: data.Confidential, Legacy: true,
			Status: data.StatusApproved, Secrets: []data.ClientSecret{sec("cs_l", env.legacySecret)}},
	}
	for _, c := range clients {
		c.Name, c.OwnerID, c.RedirectURIs, c.CreatedAt, c.UpdatedAt = "App "+c.ID, 1, []string{tkRedirect}, tkT0, tkT0
		if err := env.store.CreateClient(context.Background(), c); err != nil {
			t.Fatalf("seed client %s: %v", c.ID, err)
		}
	}
	return env
}

// tkCodeOpts describes a code to seed.
type tkCodeOpts struct {
	client       string
	challenge    string
	scopes       []string
	unrestricted bool
	ttl          time.Duration
}

// code seeds an authorization code and returns it.
func (env *tkEnv) code(o tkCodeOpts) string {
	env.t.Helper()
	code := data.NewAuthCode(time.Now())
	if o.scopes == nil && !o.unrestricted {
		o.scopes = []string{"PROFILE_READ", "BOOKING_READ"}
	}
	if o.ttl == 0 {
		o.ttl = time.Minute
	}
	err := env.store.CreateAuthCode(context.Background(), data.AuthCode{
		Hash: data.AuthCodeKey(code), ClientID: o.client, UserID: tkUser, RedirectURI: tkRedirect,
		Scopes: o.scopes, Unrestricted: o.unrestricted, CodeChallenge: o.challenge,
		CreatedAt: env.clock(), ExpiresAt: env.clock().Add(o.ttl),
	})
	if err != nil {
		env.t.Fatal(err)
	}
	return code
}

func tkChallenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// tkReq is one HTTP request to an endpoint.
type tkReq struct {
	path   string // default the token endpoint
	method string // default POST
	ct     string // default form
	body   string
	query  string
	header [][2]string
	remote string
}

func tkForm(kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(kv[i]) + "=" + url.QueryEscape(kv[i+1]))
	}
	return b.String()
}

func tkJSON(kv ...string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func tkBasic(id, secret string) [2]string {
	return [2]string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret)))}
}

func (env *tkEnv) do(r tkReq) *httptest.ResponseRecorder {
	env.t.Helper()
	if r.path == "" {
		r.path = "/v2/auth/oauth2/token"
	}
	if r.method == "" {
		r.method = http.MethodPost
	}
	if r.ct == "" {
		r.ct = "application/x-www-form-urlencoded"
	}
	target := r.path
	if r.query != "" {
		target += "?" + r.query
	}
	req := httptest.NewRequest(r.method, target, strings.NewReader(r.body))
	if r.ct != "none" {
		req.Header.Set("Content-Type", r.ct)
	}
	for _, h := range r.header {
		req.Header.Add(h[0], h[1])
	}
	if r.remote != "" {
		req.RemoteAddr = r.remote
	}
	rec := httptest.NewRecorder()
	env.e.ServeHTTP(rec, req)
	return rec
}

// tkTokens is a decoded token response.
type tkTokens struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	Scope        string `json:"scope"`
}

// mustTokens asserts a 200 token response and decodes it.
func (env *tkEnv) mustTokens(rec *httptest.ResponseRecorder) tkTokens {
	env.t.Helper()
	if rec.Code != http.StatusOK {
		env.t.Fatalf("status = %d, body %s; want 200", rec.Code, rec.Body)
	}
	var tok tkTokens
	if err := json.Unmarshal(rec.Body.Bytes(), &tok); err != nil {
		env.t.Fatalf("decode %s: %v", rec.Body, err)
	}
	return tok
}

// exchange trades a fresh code of client conf for tokens.
func (env *tkEnv) exchange() tkTokens {
	env.t.Helper()
	code := env.code(tkCodeOpts{client: "conf"})
	return env.mustTokens(env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code,
		"redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)}))
}

func (env *tkEnv) refreshReq(client, secret, rt string, extra ...string) tkReq {
	kv := append([]string{"grant_type", "refresh_token", "refresh_token", rt, "client_id", client, "client_secret", secret}, extra...)
	return tkReq{body: tkForm(kv...)}
}

// oauthErr decodes an error response and checks its headers.
func tkOAuthErr(t testing.TB, rec *httptest.ResponseRecorder) (code string) {
	t.Helper()
	if got := rec.Header().Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q; want no-store", got)
	}
	if got := rec.Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q; want application/json", got)
	}
	var body struct {
		Error string `json:"error"`
		Desc  string `json:"error_description"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("error body %q: %v", rec.Body, err)
	}
	return body.Error
}
