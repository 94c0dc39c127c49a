package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
	"github.com/lestrrat-go/jwx/v2/jwt"
	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
)

// The user every end-to-end test signs in as.
const (
	e2eEmail    = "ann@example.com"
	e2eUsername = "ann"
	e2eName     = "Ann Lee"
	e2eTimeZone = "Europe/Berlin"
	e2ePassword = "correct horse battery staple"
	// e2eRedirect is where the clients redirect; nothing needs to listen
	// there, the consenttest.Browser stops at it.
	e2eRedirect = "http://127.0.0.1:9/cb"
)

// e2e is a running `oauthd serve` on a fresh database with one user.
type e2e struct {
	*server
	userID int64
}

// startE2E starts the real binary and adds the test user through the CLI.
func startE2E(t *testing.T) *e2e {
	t.Helper()
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db)
	var u struct {
		ID int64 `json:"id"`
	}
	oneJSON(t, mustOauthd(t, db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--time-zone", e2eTimeZone, "--password-stdin", "--json"), &u)
	if u.ID <= 0 {
		t.Fatalf("users add gave id %d", u.ID)
	}
	return &e2e{server: s, userID: u.ID}
}

// cli runs the CLI against the running server's database.
func (e *e2e) cli(t *testing.T, args ...string) string {
	t.Helper()
	return mustOauthd(t, e.db, "", args...)
}

// client creates a client through the CLI (`clients create … --json` plus
// extra flags) and approves it unless extra holds "--pending". It returns
// the client ID and secret ("" for a public client).
func (e *e2e) client(t *testing.T, redirect string, scopes []string, extra ...string) (id, secret string) {
	t.Helper()
	pending := false
	args := []string{"clients", "create", "--owner", e2eEmail, "--name", "Calendar Sync", "--redirect-uri", redirect, "--json"}
	for _, s := range scopes {
		args = append(args, "--scope", s)
	}
	for _, x := range extra {
		if x == "--pending" {
			pending = true
			continue
		}
		args = append(args, x)
	}
	var c struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		Status       string `json:"status"`
	}
	oneJSON(t, e.cli(t, args...), &c)
	if c.ClientID == "" || c.Status != "pending" {
		t.Fatalf("clients create = %+v", c)
	}
	if !pending {
		e.cli(t, "clients", "approve", c.ClientID)
	}
	return c.ClientID, c.ClientSecret
}

// config is an x/oauth2 client configuration for the server.
func (e *e2e) config(id, secret, redirect string, style oauth2.AuthStyle, scopes ...string) *oauth2.Config {
	return &oauth2.Config{
		ClientID:     id,
		ClientSecret: secret,
		RedirectURL:  redirect,
		Scopes:       scopes,
		Endpoint: oauth2.Endpoint{
			AuthURL:   e.base + "/auth/oauth2/authorize",
			TokenURL:  e.base + "/v2/auth/oauth2/token",
			AuthStyle: style,
		},
	}
}

// tokenURL and friends are the server's endpoints.
func (e *e2e) tokenURL() string      { return e.base + "/v2/auth/oauth2/token" }
func (e *e2e) introspectURL() string { return e.base + "/v2/auth/oauth2/introspect" }

// codeFlow runs the authorization request through the login and consent
// pages (Allow) and returns the code, checking state and iss on the way.
func (e *e2e) codeFlow(t *testing.T, ctx context.Context, b *consenttest.Browser, conf *oauth2.Config, opts ...oauth2.AuthCodeOption) string {
	t.Helper()
	state := oauth2.GenerateVerifier()[:22]
	got, err := b.Authorize(ctx, conf.AuthCodeURL(state, opts...), e2eEmail, e2ePassword, true)
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	q := got.Query()
	if withoutQuery := strings.SplitN(got.String(), "?", 2)[0]; withoutQuery != conf.RedirectURL {
		t.Fatalf("redirected to %s; want %s", got, conf.RedirectURL)
	}
	if q.Get("code") == "" || q.Get("state") != state || q.Get("iss") != e.base || q.Get("error") != "" {
		t.Fatalf("redirect %s; want code, state %q and iss %q", got, state, e.base)
	}
	return q.Get("code")
}

// e2eTokenResponse is a raw token endpoint response.
type e2eTokenResponse struct {
	Status int
	Header http.Header
	Body   map[string]any
}

func (r e2eTokenResponse) str(k string) string { s, _ := r.Body[k].(string); return s }

// e2ePost posts vals to u, with HTTP Basic credentials when user != "".
func e2ePost(t *testing.T, u string, vals url.Values, user, pass string) e2eTokenResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(vals.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(url.QueryEscape(user), url.QueryEscape(pass))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := e2eTokenResponse{Status: resp.StatusCode, Header: resp.Header, Body: map[string]any{}}
	if err := json.Unmarshal(raw, &r.Body); err != nil {
		t.Fatalf("POST %s = %d, body %q is not JSON: %v", u, resp.StatusCode, raw, err)
	}
	return r
}

// refresh sends a refresh_token grant with the credentials in the body.
func (e *e2e) refresh(t *testing.T, id, secret, rt string) e2eTokenResponse {
	t.Helper()
	v := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {id}}
	if secret != "" {
		v.Set("client_secret", secret)
	}
	return e2ePost(t, e.tokenURL(), v, "", "")
}

// introspect asks the introspection endpoint about tok.
func (e *e2e) introspect(t *testing.T, id, secret, tok string) map[string]any {
	t.Helper()
	r := e2ePost(t, e.introspectURL(), url.Values{"token": {tok}}, id, secret)
	if r.Status != http.StatusOK {
		t.Fatalf("introspect = %d %v", r.Status, r.Body)
	}
	return r.Body
}

// me calls GET /v2/me with the bearer token and returns status and body.
func (e *e2e) me(t *testing.T, tok string) (int, string) {
	t.Helper()
	return e2eGet(t, e.base+"/v2/me", tok, nil)
}

// e2eGet sends GET u with the token (if any) and extra headers.
func e2eGet(t *testing.T, u, tok string, hdr http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// wantMe checks that /v2/me answers 200 with the test user's profile,
// exactly.
func (e *e2e) wantMe(t *testing.T, tok string) {
	t.Helper()
	status, body := e.me(t, tok)
	want := `{"status":"success","data":{"id":` + e2eJSONInt(e.userID) + `,"email":"` + e2eEmail + `","username":"` + e2eUsername +
		`","name":"` + e2eName + `","timeZone":"` + e2eTimeZone + `"}}`
	if status != http.StatusOK || strings.TrimSpace(body) != want {
		t.Fatalf("/v2/me = %d %s; want 200 %s", status, body, want)
	}
}

func e2eJSONInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// verifyJWT checks tok against the server's JWKS with jwx (signature, kid,
// iss, aud, exp) and returns its claims and protected header.
func (e *e2e) verifyJWT(t *testing.T, ctx context.Context, tok string) (map[string]any, jws.Headers) {
	t.Helper()
	set, err := jwk.Fetch(ctx, e.base+"/.well-known/jwks.json")
	if err != nil {
		t.Fatalf("fetch JWKS: %v", err)
	}
	parsed, err := jwt.Parse([]byte(tok), jwt.WithKeySet(set), jwt.WithValidate(true),
		jwt.WithIssuer(e.base), jwt.WithAudience(e.base), jwt.WithAcceptableSkew(5*time.Second))
	if err != nil {
		t.Fatalf("access token does not verify against the JWKS: %v", err)
	}
	claims, err := parsed.AsMap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := jws.Parse([]byte(tok))
	if err != nil || len(msg.Signatures()) != 1 {
		t.Fatalf("jws.Parse: %v", err)
	}
	return claims, msg.Signatures()[0].ProtectedHeaders()
}
