package issuer

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/keys/guard"
	"oauthd/keys/verify"
)

// downStore is a Store that, while down, fails every call with an error
// wrapping data.ErrUnavailable (as data/postgres does for a refused
// connection), or only the calls whose method fail names.
type downStore struct {
	Store
	down atomic.Bool
	only atomic.Value // string: the one method that fails; "" every method
}

var errConnRefused = fmt.Errorf("%w: dial tcp 127.0.0.1:5432: connect: connection refused", data.ErrUnavailable)

func (d *downStore) fail(method string) error {
	if !d.down.Load() {
		return nil
	}
	if only, _ := d.only.Load().(string); only != "" && only != method {
		return nil
	}
	return fmt.Errorf("%s: %w", method, errConnRefused)
}

func (d *downStore) GetClient(ctx context.Context, id string) (data.Client, error) {
	if err := d.fail("GetClient"); err != nil {
		return data.Client{}, err
	}
	return d.Store.GetClient(ctx, id)
}

func (d *downStore) ListClients(ctx context.Context, s data.ClientStatus) ([]data.Client, error) {
	if err := d.fail("ListClients"); err != nil {
		return nil, err
	}
	return d.Store.ListClients(ctx, s)
}

func (d *downStore) ExchangeAuthCode(ctx context.Context, hash []byte, f func(data.AuthCode) (data.Family, error)) (data.AuthCode, data.Family, error) {
	if err := d.fail("ExchangeAuthCode"); err != nil {
		return data.AuthCode{}, data.Family{}, err
	}
	return d.Store.ExchangeAuthCode(ctx, hash, f)
}

func (d *downStore) RotateRefreshToken(ctx context.Context, id string, f func(data.Family) (data.Family, error)) (data.Family, error) {
	if err := d.fail("RotateRefreshToken"); err != nil {
		return data.Family{}, err
	}
	return d.Store.RotateRefreshToken(ctx, id, f)
}

func (d *downStore) GetFamily(ctx context.Context, id string) (data.Family, error) {
	if err := d.fail("GetFamily"); err != nil {
		return data.Family{}, err
	}
	return d.Store.GetFamily(ctx, id)
}

func (d *downStore) DeleteFamily(ctx context.Context, id string) error {
	if err := d.fail("DeleteFamily"); err != nil {
		return err
	}
	return d.Store.DeleteFamily(ctx, id)
}

func (d *downStore) GetUser(ctx context.Context, id int64) (data.User, error) {
	if err := d.fail("GetUser"); err != nil {
		return data.User{}, err
	}
	return d.Store.GetUser(ctx, id)
}

func (d *downStore) UseNonce(ctx context.Context, key []byte, exp time.Time) error {
	if err := d.fail("UseNonce"); err != nil {
		return err
	}
	return d.Store.UseNonce(ctx, key, exp)
}

func (d *downStore) CreateConsentedCode(ctx context.Context, c data.AuthCode, check func(data.Client, data.Grant, bool) error) error {
	if err := d.fail("CreateConsentedCode"); err != nil {
		return err
	}
	return d.Store.CreateConsentedCode(ctx, c, check)
}

func (d *downStore) GetGrant(ctx context.Context, userID int64, clientID string) (data.Grant, error) {
	if err := d.fail("GetGrant"); err != nil {
		return data.Grant{}, err
	}
	return d.Store.GetGrant(ctx, userID, clientID)
}

// TestStoreOutageIs503: while the store is unavailable every endpoint
// that needs it answers 503 temporarily_unavailable with Retry-After
// (the authorization endpoint, once the redirect URI is trusted, a
// temporarily_unavailable redirect), never 500; the outage is logged once
// when it starts and once when it ends, not per request.
func TestStoreOutageIs503(t *testing.T) {
	var ds *downStore
	var claims atomic.Pointer[verify.Claims]
	outage := NewOutage(OutageConfig{Interval: 5 * time.Millisecond})
	env := newTkEnv(t, func(c *Config) {
		ds = &downStore{Store: c.Store}
		c.Store = ds
		c.Outage = outage
		c.MeAuth = func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(e echo.Context) error {
				if cl := claims.Load(); cl != nil {
					e.SetRequest(e.Request().WithContext(guard.WithClaims(e.Request().Context(), cl)))
				}
				return next(e)
			}
		}
	})
	outage.cfg.Logger = env.s.log
	outage.cfg.Probe = func(context.Context) error {
		if ds.down.Load() {
			return errConnRefused
		}
		return nil
	}
	env.e.HTTPErrorHandler = HTTPErrorHandler(env.s.log, outage)
	tok := env.mustTokens(env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", env.code(tkCodeOpts{client: "conf"}),
		"redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)}))
	claims.Store(&verify.Claims{Subject: strconv.FormatInt(tkUser, 10), ClientID: "conf", Scopes: []string{"PROFILE_READ"}, GrantID: tkFamily(t, tok.RefreshToken)})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { outage.Run(ctx); close(done) }()

	ds.down.Store(true)
	requests := []struct {
		name, only string
		req        tkReq
	}{
		{"token: client authentication", "", tkReq{body: tkForm("grant_type", "refresh_token", "refresh_token", tok.RefreshToken, "client_id", "conf", "client_secret", env.secretA)}},
		{"token: code exchange", "ExchangeAuthCode", tkReq{body: tkForm("grant_type", "authorization_code", "code", env.code(tkCodeOpts{client: "conf"}),
			"redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)}},
		{"token: refresh", "RotateRefreshToken", tkReq{body: tkForm("grant_type", "refresh_token", "refresh_token", tok.RefreshToken, "client_id", "conf", "client_secret", env.secretA)}},
		{"revoke", "GetFamily", tkReq{path: "/v2/auth/oauth2/revoke", body: tkForm("token", tok.RefreshToken, "client_id", "conf", "client_secret", env.secretA)}},
		{"introspect", "", tkReq{path: "/v2/auth/oauth2/introspect", body: tkForm("token", tok.AccessToken, "client_id", "conf", "client_secret", env.secretA)}},
		{"par", "", tkReq{path: "/v2/auth/oauth2/par", body: tkForm("client_id", "pub", "response_type", "code", "redirect_uri", tkRedirect,
			"scope", "PROFILE_READ", "code_challenge", tkChallenge(tkVerifier), "code_challenge_method", "S256")}},
		{"token: client_credentials", "", tkReq{body: tkForm("grant_type", "client_credentials", "client_id", "conf", "client_secret", env.secretA)}},
		{"device authorization", "", tkReq{path: "/v2/auth/oauth2/device_authorization", body: tkForm("client_id", "pub", "scope", "PROFILE_READ")}},
		{"token: device code", "", tkReq{body: tkForm("grant_type", "urn:ietf:params:oauth:grant-type:device_code", "device_code", "oauthd_dc_x", "client_id", "pub")}},
		{"me: grant check", "GetFamily", tkReq{path: "/v2/me", method: http.MethodGet, ct: "none"}},
		{"me: user", "GetUser", tkReq{path: "/v2/me", method: http.MethodGet, ct: "none"}},
	}
	for round := range 3 {
		for _, r := range requests {
			ds.only.Store(r.only)
			rec := env.do(r.req)
			if rec.Code != http.StatusServiceUnavailable || tkOAuthErr(t, rec) != "temporarily_unavailable" || rec.Header().Get("Retry-After") == "" {
				t.Errorf("round %d, %s: %d %q %s; want 503 temporarily_unavailable with Retry-After", round, r.name, rec.Code, rec.Header().Get("Retry-After"), rec.Body)
			}
		}
	}
	// The authorization endpoint: before the client is trusted, an error
	// (the consent pages show their 503 page); once the redirect URI is
	// trusted, a temporarily_unavailable redirect.
	ds.only.Store("")
	q := url.Values{"client_id": {"conf"}, "redirect_uri": {tkRedirect}, "response_type": {"code"}, "scope": {"PROFILE_READ"},
		"code_challenge": {tkChallenge(tkVerifier)}, "code_challenge_method": {"S256"}, "state": {"s"}}
	if _, err := env.s.ParseAuthorize(context.Background(), q); !Unavailable(err) {
		t.Errorf("ParseAuthorize with the store down: %v; want an error wrapping data.ErrUnavailable", err)
	}
	ds.only.Store("CreateConsentedCode")
	to, err := env.s.Approve(context.Background(), q, tkUser)
	if re, ok := err.(*RedirectError); !ok || !strings.Contains(re.URL, "error=temporarily_unavailable") {
		t.Errorf("Approve with the store down = %q, %v; want a temporarily_unavailable redirect", to, err)
	}

	if n := strings.Count(env.logs.String(), "database unavailable"); n != 1 {
		t.Errorf("%d outage lines for %d refused requests; want 1:\n%s", n, 3*len(requests)+1, env.logs.String())
	}
	if strings.Contains(env.logs.String(), `"server error"`) || strings.Contains(env.logs.String(), "server_error") {
		t.Errorf("a server error was logged during the outage:\n%s", env.logs.String())
	}
	ds.down.Store(false)
	// Down turns false a moment before the line is logged: wait for both.
	for deadline := time.Now().Add(5 * time.Second); (outage.Down() || !strings.Contains(env.logs.String(), "database available again")) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if outage.Down() || strings.Count(env.logs.String(), "database available again") != 1 {
		t.Fatalf("the end of the outage was not logged once:\n%s", env.logs.String())
	}
	env.refreshOK(tok.RefreshToken)
	cancel()
	<-done
}

// tkFamily is the family (grant) ID of a refresh token.
func tkFamily(t *testing.T, rt string) string {
	t.Helper()
	id, ok := data.ParseRefreshToken(rt)
	if !ok {
		t.Fatalf("refresh token %q", rt)
	}
	return id
}
