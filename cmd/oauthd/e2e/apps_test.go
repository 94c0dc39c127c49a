package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
	"oauthd/data/postgres/pgtest"
)

// appsBrowser is a signed-in browser on the Connected apps page: a cookie
// jar, redirects not followed.
type appsBrowser struct {
	t    *testing.T
	base string
	c    *http.Client
}

// signIn logs in as the e2e user through the login form that the page
// sends an anonymous browser to, and returns at the page.
func signInToApps(t *testing.T, base string) *appsBrowser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &appsBrowser{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	resp, _ := b.do(http.MethodGet, "/settings/apps", nil)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/auth/login?") {
		t.Fatalf("GET /settings/apps signed out = %d %q; want 303 to the login page", resp.StatusCode, loc)
	}
	_, page := b.do(http.MethodGet, loc, nil)
	u, _ := url.Parse(loc)
	resp, _ = b.do(http.MethodPost, "/auth/login", url.Values{"login": {e2eEmail}, "password": {e2ePassword},
		"csrf_token": {consenttest.FormCSRF(t, page)}, "return_to": {u.Query().Get("return_to")}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/settings/apps" {
		t.Fatalf("login = %d %q; want 303 back to /settings/apps", resp.StatusCode, resp.Header.Get("Location"))
	}
	return b
}

// do sends a request (a form POST when form is not nil, with the site's
// Origin, as a browser does) and returns the response and its body.
func (b *appsBrowser) do(method, path string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", b.base)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}

// remove presses an app's "Remove access" and follows the redirect back to
// the page, which it returns.
func (b *appsBrowser) remove(clientID string) string {
	b.t.Helper()
	_, page := b.do(http.MethodGet, "/settings/apps", nil)
	resp, _ := b.do(http.MethodPost, "/settings/apps/"+clientID+"/revoke", url.Values{"csrf_token": {consenttest.FormCSRF(b.t, page)}})
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/settings/apps?") {
		b.t.Fatalf("remove %s = %d %q; want 303 to the page", clientID, resp.StatusCode, loc)
	}
	_, page = b.do(http.MethodGet, loc, nil)
	return page
}

// grantIDOf reads the grant_id claim of an access token (no verification:
// the server's checks are what is tested).
func grantIDOf(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("access token %q is not a JWS", tok)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		GrantID string `json:"grant_id"`
	}
	if err := json.Unmarshal(raw, &c); err != nil || c.GrantID == "" {
		t.Fatalf("claims %s: no grant_id (%v)", raw, err)
	}
	return c.GrantID
}

// feedGrants returns the grant IDs in the revoked-grants feed.
func feedGrants(t *testing.T, base string) []string {
	t.Helper()
	resp, err := http.Get(base + "/.well-known/revoked-grants")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	parts := strings.Split(strings.TrimSpace(string(raw)), ".")
	if resp.StatusCode != http.StatusOK || len(parts) != 3 {
		t.Fatalf("feed = %d %q", resp.StatusCode, raw)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(payload, &doc); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range doc {
		var list []string
		if json.Unmarshal(v, &list) == nil {
			ids = append(ids, list...)
		}
		var objs []map[string]any
		if json.Unmarshal(v, &objs) == nil {
			for _, o := range objs {
				for _, k := range []string{"grant_id", "id"} {
					if s, ok := o[k].(string); ok {
						ids = append(ids, s)
					}
				}
			}
		}
	}
	return ids
}

// TestConnectedAppsE2E: through the real server over HTTP, a user with two
// apps removes one on the Connected apps page. That app's refresh token
// gets invalid_grant, its access token 401 at /v2/me and inactive at
// introspection, its grant_id is in the revoked-grants feed and the
// gateway refuses it within the feed's interval; its next authorization
// shows the consent page; `users apps` no longer lists it. The other app
// keeps working.
func TestConnectedAppsE2E(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	upSrv := httptest.NewServer(&upstreamStub{})
	t.Cleanup(upSrv.Close)
	gwCmd := exec.Command(oauthdBin, "gateway", "--listen", "127.0.0.1:0", "--upstream", upSrv.URL, "--issuer", e.base,
		"--jwks-url", e.base+"/.well-known/jwks.json", "--revocation-feed-url", e.base+"/.well-known/revoked-grants",
		"--dpop-trust-host") // the port is not known before it listens
	addr, _ := startProcess(t, gwCmd, "gateway", gatewayListenRE, &logSink{})
	gw := "http://" + addr

	scopes := []string{"PROFILE_READ", "BOOKING_READ"}
	type app struct {
		id, secret string
		conf       *oauth2.Config
		tok        *oauth2.Token
	}
	apps := map[string]*app{}
	for _, name := range []string{"Removed App", "Kept App"} {
		id, secret := e.client(t, e2eRedirect, scopes, "--name", name)
		a := &app{id: id, secret: secret, conf: e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, scopes...)}
		v := oauth2.GenerateVerifier()
		code := e.codeFlow(t, ctx, consenttest.New(), a.conf, oauth2.S256ChallengeOption(v))
		tok, err := a.conf.Exchange(ctx, code, oauth2.VerifierOption(v))
		if err != nil {
			t.Fatalf("exchange for %s: %v", name, err)
		}
		a.tok = tok
		e.wantMe(t, tok.AccessToken)
		if status, body := e2eGet(t, gw+"/v2/bookings", tok.AccessToken, nil); status != http.StatusOK {
			t.Fatalf("gateway with %s's token = %d %s", name, status, body)
		}
		apps[name] = a
	}
	gone, kept := apps["Removed App"], apps["Kept App"]

	b := signInToApps(t, e.base)
	_, page := b.do(http.MethodGet, "/settings/apps", nil)
	for _, want := range []string{"Removed App", "Kept App", "View your profile.", "Last used", "Remove access"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	page = b.remove(gone.id)
	removedAt := time.Now()
	if !strings.Contains(page, "Removed App</strong> no longer has access") || strings.Contains(page, `id="app-`+gone.id+`"`) ||
		!strings.Contains(page, `id="app-`+kept.id+`"`) {
		t.Fatalf("page after removal lacks the confirmation, or still lists the app, or lost the other:\n%s", page)
	}

	// The removed app: every credential is dead at once.
	if r := e.refresh(t, gone.id, gone.secret, gone.tok.RefreshToken); r.Status != http.StatusBadRequest || r.str("error") != "invalid_grant" {
		t.Errorf("refresh of the removed app = %d %v; want invalid_grant", r.Status, r.Body)
	}
	if status, body := e.me(t, gone.tok.AccessToken); status != http.StatusUnauthorized {
		t.Errorf("/v2/me with the removed app's token = %d %s; want 401", status, body)
	}
	if got := e.introspect(t, gone.id, gone.secret, gone.tok.AccessToken); got["active"] != false {
		t.Errorf("introspection of the removed app's token = %v; want active false", got)
	}
	// The feed is rebuilt at most once a second (max-age=1).
	for gid := grantIDOf(t, gone.tok.AccessToken); !slices.Contains(feedGrants(t, e.base), gid); time.Sleep(100 * time.Millisecond) {
		if time.Since(removedAt) > 3*time.Second {
			t.Fatalf("grant %s is not in the revoked-grants feed %s after the removal", gid, time.Since(removedAt))
		}
	}
	for {
		status, _ := e2eGet(t, gw+"/v2/bookings", gone.tok.AccessToken, nil)
		if status == http.StatusUnauthorized {
			t.Logf("the gateway refused the removed app's token %s after the removal", time.Since(removedAt).Round(time.Millisecond))
			break
		}
		if status != http.StatusOK || time.Since(removedAt) > feedRefusalBound {
			t.Fatalf("gateway with the removed app's token = %d, %s after the removal; want 401 within %s", status, time.Since(removedAt), feedRefusalBound)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Its next authorization asks for consent again.
	_, consentPage := b.do(http.MethodGet, strings.TrimPrefix(gone.conf.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())), e.base), nil)
	if !strings.Contains(consentPage, "wants to access your account") || !strings.Contains(consentPage, `value="allow"`) {
		t.Errorf("the removed app's next authorization does not show the consent page:\n%s", consentPage)
	}

	// The other app keeps working.
	e.wantMe(t, kept.tok.AccessToken)
	if status, _ := e2eGet(t, gw+"/v2/bookings", kept.tok.AccessToken, nil); status != http.StatusOK {
		t.Errorf("gateway with the kept app's token = %d; want 200", status)
	}
	if r := e.refresh(t, kept.id, kept.secret, kept.tok.RefreshToken); r.Status != http.StatusOK {
		t.Errorf("refresh of the kept app = %d %v; want 200", r.Status, r.Body)
	}
	var listed []struct {
		ClientID string   `json:"client_id"`
		Name     string   `json:"name"`
		Scopes   []string `json:"scopes"`
		GrantIDs []string `json:"grant_ids"`
	}
	oneJSON(t, e.cli(t, "users", "apps", e2eUsername, "--json"), &listed)
	if len(listed) != 1 || listed[0].ClientID != kept.id || len(listed[0].GrantIDs) != 1 {
		t.Errorf("users apps after the removal = %+v; want the kept app with its one grant", listed)
	}
}

// TestRaceRemoveApp: removing an app (the page's button, or `users apps
// revoke` through the admin socket) while the same app exchanges a fresh
// code and refreshes its grant, repeated: whatever commits first, nothing
// survives the removal. Every refresh token any of them returned is
// refused, every access token is refused at /v2/me, and the app is no
// longer listed.
func TestRaceRemoveApp(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
	conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
	br := consenttest.New()
	page := signInToApps(t, e.base)
	outcomes := map[string]int{}
	for round := range 8 {
		v := oauth2.GenerateVerifier()
		live, err := conf.Exchange(ctx, e.codeFlow(t, ctx, br, conf, oauth2.S256ChallengeOption(v)), oauth2.VerifierOption(v))
		if err != nil {
			t.Fatal(err)
		}
		v2 := oauth2.GenerateVerifier()
		code := e.codeFlow(t, ctx, br, conf, oauth2.S256ChallengeOption(v2))
		_, appsPage := page.do(http.MethodGet, "/settings/apps", nil)
		csrf := consenttest.FormCSRF(t, appsPage)

		var exchanged *oauth2.Token
		var refreshed e2eTokenResponse
		start := make(chan struct{})
		done := make(chan struct{}, 3)
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			exchanged, _ = conf.Exchange(ctx, code, oauth2.VerifierOption(v2))
		}()
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			refreshed = e2ePostNoFatal(e.tokenURL(), url.Values{"grant_type": {"refresh_token"}, "refresh_token": {live.RefreshToken},
				"client_id": {id}, "client_secret": {secret}})
		}()
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			if round%2 == 1 {
				_, _, _ = oauthd(t, e.db, "", "users", "apps", "revoke", e2eEmail, id)
				return
			}
			req, _ := http.NewRequest(http.MethodPost, e.base+"/settings/apps/"+id+"/revoke", strings.NewReader(url.Values{"csrf_token": {csrf}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", e.base)
			if resp, err := page.c.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		close(start)
		for range 3 {
			<-done
		}
		rts, ats := []string{live.RefreshToken}, []string{live.AccessToken}
		if exchanged != nil {
			rts, ats = append(rts, exchanged.RefreshToken), append(ats, exchanged.AccessToken)
			outcomes["exchange won"]++
		} else {
			outcomes["exchange lost"]++
		}
		if refreshed.Status == http.StatusOK {
			rts, ats = append(rts, refreshed.str("refresh_token")), append(ats, refreshed.str("access_token"))
			outcomes["refresh won"]++
		} else {
			outcomes["refresh lost"]++
		}
		for _, rt := range rts {
			if r := e.refresh(t, id, secret, rt); r.Status != http.StatusBadRequest || r.str("error") != "invalid_grant" {
				t.Fatalf("round %d: a refresh token survived the removal: %d %v", round, r.Status, r.Body)
			}
		}
		for _, at := range ats {
			if status, body := e.me(t, at); status != http.StatusUnauthorized {
				t.Fatalf("round %d: an access token survived the removal at /v2/me: %d %s", round, status, body)
			}
		}
		var listed []struct {
			ClientID string `json:"client_id"`
		}
		oneJSON(t, e.cli(t, "users", "apps", e2eEmail, "--json"), &listed)
		if len(listed) != 0 {
			t.Fatalf("round %d: users apps after the removal = %+v; want none", round, listed)
		}
	}
	t.Logf("outcomes over 8 rounds: %v", outcomes)
}

// e2ePostNoFatal posts a token request from a goroutine (no t.Fatal).
func e2ePostNoFatal(u string, vals url.Values) e2eTokenResponse {
	resp, err := http.PostForm(u, vals)
	if err != nil {
		return e2eTokenResponse{}
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return e2eTokenResponse{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// TestUsersAppsCLI: `users apps` and `users apps revoke` on both
// backends, while the server runs (bolt: through the admin socket;
// PostgreSQL: on the database) and while it does not; USER by ID, email
// or username.
func TestUsersAppsCLI(t *testing.T) {
	t.Run("bolt", func(t *testing.T) { testUsersAppsCLI(t, filepath.Join(t.TempDir(), "o.db")) })
	t.Run("postgres", func(t *testing.T) {
		db := pgtest.New(t)
		mustOauthd(t, db, "", "store", "migrate")
		testUsersAppsCLI(t, db)
	})
}

func testUsersAppsCLI(t *testing.T, db string) {
	ctx := context.Background()
	e := &e2e{server: startServe(t, db)}
	var u struct{ ID int64 }
	oneJSON(t, mustOauthd(t, db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--password-stdin", "--json"), &u)
	e.userID = u.ID
	type app struct{ id, secret, rt string }
	var apps []app
	for _, name := range []string{"Alpha Sync", "Beta Export"} {
		id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ", "BOOKING_READ"}, "--name", name)
		conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
		v := oauth2.GenerateVerifier()
		tok, err := conf.Exchange(ctx, e.codeFlow(t, ctx, consenttest.New(), conf, oauth2.S256ChallengeOption(v)), oauth2.VerifierOption(v))
		if err != nil {
			t.Fatal(err)
		}
		apps = append(apps, app{id, secret, tok.RefreshToken})
	}
	type listed struct {
		ClientID       string     `json:"client_id"`
		Name           string     `json:"name"`
		Developer      string     `json:"developer"`
		Status         string     `json:"status"`
		Scopes         []string   `json:"scopes"`
		FirstAllowedAt time.Time  `json:"first_allowed_at"`
		LastUsedAt     *time.Time `json:"last_used_at"`
		GrantIDs       []string   `json:"grant_ids"`
	}
	list := func(ref string) []listed {
		t.Helper()
		var out []listed
		oneJSON(t, mustOauthd(t, db, "", "users", "apps", ref, "--json"), &out)
		return out
	}

	// While the server runs.
	got := list(e2eEmail)
	if len(got) != 2 || got[0].Name != "Alpha Sync" || got[1].Name != "Beta Export" || got[0].Developer != e2eEmail ||
		!slices.Equal(got[0].Scopes, []string{"PROFILE_READ"}) || got[0].LastUsedAt == nil || len(got[0].GrantIDs) != 1 || got[0].Status != "approved" {
		t.Fatalf("users apps = %+v", got)
	}
	text := mustOauthd(t, db, "", "users", "apps", e2eUsername)
	for _, want := range []string{"CLIENT ID", "LAST USED", "Alpha Sync", "Beta Export", "PROFILE_READ"} {
		if !strings.Contains(text, want) {
			t.Errorf("users apps (text) lacks %q:\n%s", want, text)
		}
	}
	var r struct {
		UserID           int64    `json:"user_id"`
		ClientID         string   `json:"client_id"`
		Name             string   `json:"name"`
		RevokedGrantIDs  []string `json:"revoked_grant_ids"`
		ConsentForgotten bool     `json:"consent_forgotten"`
	}
	oneJSON(t, mustOauthd(t, db, "", "users", "apps", "revoke", e2eUsername, apps[0].id, "--json"), &r)
	if r.UserID != e.userID || r.ClientID != apps[0].id || r.Name != "Alpha Sync" || !slices.Equal(r.RevokedGrantIDs, got[0].GrantIDs) || !r.ConsentForgotten {
		t.Fatalf("users apps revoke = %+v", r)
	}
	if res := e.refresh(t, apps[0].id, apps[0].secret, apps[0].rt); res.Status != http.StatusBadRequest || res.str("error") != "invalid_grant" {
		t.Fatalf("refresh after users apps revoke = %d %v; want invalid_grant at once", res.Status, res.Body)
	}
	// Idempotent.
	if out := mustOauthd(t, db, "", "users", "apps", "revoke", e2eEmail, apps[0].id); !strings.Contains(out, "grants_revoked:") {
		t.Fatalf("users apps revoke again = %q", out)
	}
	for _, bad := range [][]string{
		{"users", "apps", "nobody@example.com"},
		{"users", "apps", "revoke", e2eEmail, "no-such-client"},
		{"users", "apps"},
	} {
		if _, stderr, err := oauthd(t, db, "", bad...); err == nil || stderr == "" {
			t.Errorf("oauthd %v: err %v, stderr %q; want a refusal with a sentence", bad, err, stderr)
		}
	}

	// Without a server.
	stopServe(t, e.server)
	got = list(strconv.FormatInt(e.userID, 10))
	if len(got) != 1 || got[0].ClientID != apps[1].id {
		t.Fatalf("users apps without a server = %+v; want Beta Export only", got)
	}
	mustOauthd(t, db, "", "users", "apps", "revoke", strconv.FormatInt(e.userID, 10), apps[1].id)
	if got := list(e2eUsername); len(got) != 0 {
		t.Fatalf("users apps after the offline revoke = %+v; want none", got)
	}
	e.server = startServe(t, db)
	if res := e.refresh(t, apps[1].id, apps[1].secret, apps[1].rt); res.Status != http.StatusBadRequest || res.str("error") != "invalid_grant" {
		t.Fatalf("refresh after an offline users apps revoke = %d %v; want invalid_grant", res.Status, res.Body)
	}
}
