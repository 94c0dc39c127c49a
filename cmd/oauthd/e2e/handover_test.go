package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/golang-jwt/jwt/v5"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
)

// platform is a small stand-in for the platform oauthd serves: its own
// login form and users, its own ES256 signing key (rotatable), its JWKS.
// It signs a login assertion (docs/LOGIN-HANDOVER.md) for the user who
// logs in and sends the browser back to oauthd.
type platform struct {
	*httptest.Server
	t   *testing.T
	iss string

	mu       sync.Mutex
	aud      string // oauthd's issuer, known once it runs
	key      *ecdsa.PrivateKey
	kid      string
	old      *ecdsa.PublicKey // the previous key, still published after a rotation
	oldKid   string
	disabled map[string]bool // platform user IDs whose account ended
}

// The platform's one user.
const (
	platUserID   = "u-4711"
	platEmail    = "pat@platform.example"
	platName     = "Pat Doe"
	platTZ       = "America/New_York"
	platPassword = "platform password"
)

func newPlatform(t *testing.T) *platform {
	p := &platform{t: t, iss: "https://platform.example", disabled: map[string]bool{}}
	p.rotate()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		fmt.Fprintf(w, `<!doctype html><form method="post" action="/login">
<input type="hidden" name="return_to" value="%s"><input type="hidden" name="challenge" value="%s">
<input type="email" name="email"><input type="password" name="password"><button>Sign in</button></form>`,
			html.EscapeString(q.Get("return_to")), html.EscapeString(q.Get("challenge")))
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		if r.PostFormValue("email") != platEmail || r.PostFormValue("password") != platPassword {
			http.Error(w, "wrong login", http.StatusUnauthorized)
			return
		}
		// The platform sends the browser back only to oauthd.
		rt := r.PostFormValue("return_to")
		if rt != p.audience()+"/auth/login/handover" {
			http.Error(w, "unknown return_to", http.StatusBadRequest)
			return
		}
		tok := p.sign(p.claims(r.PostFormValue("challenge")))
		http.Redirect(w, r, rt+"?assertion="+url.QueryEscape(tok), http.StatusSeeOther)
	})
	mux.HandleFunc("GET /jwks.json", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		set := jwk.NewSet()
		add := func(pub *ecdsa.PublicKey, kid string) {
			k, err := jwk.FromRaw(pub)
			if err != nil {
				t.Error(err)
				return
			}
			_ = k.Set(jwk.KeyIDKey, kid)
			_ = k.Set(jwk.AlgorithmKey, "ES256")
			_ = set.AddKey(k)
		}
		add(&p.key.PublicKey, p.kid)
		if p.old != nil {
			add(p.old, p.oldKid)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(set)
	})
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

func (p *platform) audience() string { p.mu.Lock(); defer p.mu.Unlock(); return p.aud }

// rotate makes a new signing key; the old one stays published.
func (p *platform) rotate() {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.key != nil {
		p.old, p.oldKid = &p.key.PublicKey, p.kid
	}
	p.key, p.kid = k, "plat-"+rand.Text()[:8]
}

// claims are the assertion's claims for the platform's user.
func (p *platform) claims(challenge string) jwt.MapClaims {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	c := jwt.MapClaims{
		"iss": p.iss, "aud": p.aud, "sub": platUserID, "email": platEmail, "name": platName, "time_zone": platTZ,
		"iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "challenge": challenge, "jti": rand.Text(),
	}
	if p.disabled[platUserID] {
		c["disabled"] = true
	}
	return c
}

// sign signs claims with the platform's current key.
func (p *platform) sign(c jwt.MapClaims) string {
	p.mu.Lock()
	key, kid := p.key, p.kid
	p.mu.Unlock()
	return signWith(p.t, key, kid, c)
}

func signWith(t *testing.T, key *ecdsa.PrivateKey, kid string, c jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// handoverServer is oauthd serving with the login handed over to p, plus
// a local user who owns a client.
type handoverServer struct {
	*e2e
	p *platform
}

func startHandover(t *testing.T) *handoverServer {
	t.Helper()
	p := newPlatform(t)
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db, "--login-url", p.URL+"/login", "--login-issuer", p.iss, "--login-jwks", p.URL+"/jwks.json")
	p.mu.Lock()
	p.aud = s.base
	p.mu.Unlock()
	var u struct {
		ID int64 `json:"id"`
	}
	oneJSON(t, mustOauthd(t, db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--time-zone", e2eTimeZone, "--password-stdin", "--json"), &u)
	return &handoverServer{e2e: &e2e{server: s, userID: u.ID}, p: p}
}

// newJar is a browser's cookie jar.
func newJar(t *testing.T) http.CookieJar {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return jar
}

// startLogin opens authURL in a browser with jar and no session: oauthd
// sends it to the platform's login page. It returns that URL's query
// (return_to, challenge).
func (h *handoverServer) startLogin(t *testing.T, ctx context.Context, jar http.CookieJar, authURL string) url.Values {
	t.Helper()
	b := consenttest.New()
	b.Client.Jar = jar
	loc, err := b.Authorize(ctx, authURL, "", "", true)
	if err != nil {
		t.Fatalf("authorize without a session: %v", err)
	}
	if !strings.HasPrefix(loc.String(), h.p.URL+"/login?") {
		t.Fatalf("without a session, oauthd sent the browser to %s; want the platform's login page", loc)
	}
	q := loc.Query()
	if q.Get("return_to") != h.base+"/auth/login/handover" || len(q.Get("challenge")) < 40 {
		t.Fatalf("platform login URL %s; want return_to %s and a challenge", loc, h.base+"/auth/login/handover")
	}
	return q
}

// browse GETs or POSTs with jar, following redirects except to the
// client's redirect URI; it returns the last response's status, URL and
// body.
func browse(t *testing.T, jar http.CookieJar, method, u string, form url.Values) (int, *url.URL, string) {
	t.Helper()
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), e2eRedirect) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	var (
		resp *http.Response
		err  error
	)
	if method == http.MethodPost {
		resp, err = c.PostForm(u, form)
	} else {
		resp, err = c.Get(u)
	}
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Request.URL, string(b)
}

// TestHandoverFlow: the client's authorization URL → oauthd → the
// platform's login form → back to oauthd with the signed assertion → the
// consent page → code → tokens → /v2/me shows the platform's user,
// created just in time. Then the platform rotates its key and oauthd
// follows; then the platform ends the account and the assertion that says
// so revokes the user's tokens at once.
func TestHandoverFlow(t *testing.T) {
	h := startHandover(t)
	ctx := context.Background()
	id, secret := h.client(t, e2eRedirect, []string{"PROFILE_READ", "BOOKING_READ"})
	conf := h.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ", "BOOKING_READ")
	verifier := oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL("st-1", oauth2.S256ChallengeOption(verifier))

	first := newJar(t)
	q := h.startLogin(t, ctx, first, authURL)
	// The user signs in at the platform's own form.
	status, at, body := browse(t, first, http.MethodPost, h.p.URL+"/login", url.Values{
		"return_to": {q.Get("return_to")}, "challenge": {q.Get("challenge")}, "email": {platEmail}, "password": {platPassword}})
	if status != http.StatusOK || at.Path != "/auth/oauth2/authorize" || !strings.Contains(body, "Calendar Sync") {
		t.Fatalf("after the platform's login: %d at %s; want the consent page\n%s", status, at, body)
	}
	// The consent page works as after the built-in login.
	b := consenttest.New()
	b.Client.Jar = first
	loc, err := b.Authorize(ctx, authURL, "", "", true)
	if err != nil || loc.Query().Get("code") == "" || loc.Query().Get("state") != "st-1" {
		t.Fatalf("consent = %v, %v; want a code", loc, err)
	}
	tok, err := conf.Exchange(ctx, loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	status, me := h.me(t, tok.AccessToken)
	var prof struct {
		Data struct {
			ID       int64  `json:"id"`
			Email    string `json:"email"`
			Name     string `json:"name"`
			TimeZone string `json:"timeZone"`
		} `json:"data"`
	}
	_ = json.Unmarshal([]byte(me), &prof)
	if status != http.StatusOK || prof.Data.Email != platEmail || prof.Data.Name != platName || prof.Data.TimeZone != platTZ || prof.Data.ID == h.userID {
		t.Fatalf("/v2/me = %d %s; want the platform's user, made just in time", status, me)
	}
	// The settings pages work for the platform's user too.
	if status, at, body := browse(t, first, http.MethodGet, h.base+"/settings/clients", nil); status != http.StatusOK || at.Path != "/settings/clients" || !strings.Contains(body, platName) {
		t.Fatalf("settings pages after the handover: %d at %s; want 200\n%s", status, at, body)
	}
	// So does Connected apps, with the app the platform's user just allowed.
	if status, at, body := browse(t, first, http.MethodGet, h.base+"/settings/apps", nil); status != http.StatusOK || at.Path != "/settings/apps" ||
		!strings.Contains(body, "Remove access") || !strings.Contains(body, platName) {
		t.Fatalf("Connected apps after the handover: %d at %s; want 200 with the app\n%s", status, at, body)
	}
	var users []struct {
		ID         int64  `json:"id"`
		ExternalID string `json:"external_id"`
		State      string `json:"state"`
	}
	oneJSON(t, h.cli(t, "users", "list", "--json"), &users)
	if len(users) != 2 || users[1].ExternalID != platUserID || users[1].State != "active" {
		t.Fatalf("users list = %+v; want the local user and the platform's user %s", users, platUserID)
	}

	t.Run("KeyRotation", func(t *testing.T) {
		h.p.rotate()
		time.Sleep(2100 * time.Millisecond) // oauthd refetches on an unknown kid at most every 2 s
		jar := newJar(t)
		q := h.startLogin(t, ctx, jar, authURL)
		status, at, body := browse(t, jar, http.MethodPost, h.p.URL+"/login", url.Values{
			"return_to": {q.Get("return_to")}, "challenge": {q.Get("challenge")}, "email": {platEmail}, "password": {platPassword}})
		if status != http.StatusOK || at.Path != "/auth/oauth2/authorize" {
			t.Fatalf("login with the platform's new key: %d at %s; want the consent page\n%s", status, at, body)
		}
		users = nil
		oneJSON(t, h.cli(t, "users", "list", "--json"), &users)
		if len(users) != 2 {
			t.Fatalf("a second login made another user: %+v", users)
		}
	})

	t.Run("PlatformDisables", func(t *testing.T) {
		h.p.mu.Lock()
		h.p.disabled[platUserID] = true
		h.p.mu.Unlock()
		jar := newJar(t)
		q := h.startLogin(t, ctx, jar, authURL)
		status, _, body := browse(t, jar, http.MethodPost, h.p.URL+"/login", url.Values{
			"return_to": {q.Get("return_to")}, "challenge": {q.Get("challenge")}, "email": {platEmail}, "password": {platPassword}})
		if status != http.StatusForbidden || !strings.Contains(body, "disabled") {
			t.Fatalf("login of a user the platform disabled: %d; want 403 saying disabled\n%s", status, body)
		}
		if status, body := h.me(t, tok.AccessToken); status != http.StatusUnauthorized {
			t.Fatalf("/v2/me after the platform disabled the user = %d %s; want 401", status, body)
		}
		if got := h.introspect(t, id, secret, tok.AccessToken); got["active"] != false {
			t.Fatalf("introspect(access) = %v; want inactive", got)
		}
		if r := h.refresh(t, id, secret, tok.RefreshToken); r.Status != http.StatusBadRequest || r.str("error") != "invalid_grant" {
			t.Fatalf("refresh after disable = %d %v; want invalid_grant", r.Status, r.Body)
		}
		// The first browser's session is gone too: it is sent to log in.
		if _, at, _ := browse(t, first, http.MethodGet, authURL, nil); !strings.HasPrefix(at.String(), h.p.URL+"/login") {
			t.Fatalf("the disabled user's old session led to %s; want the platform's login", at)
		}
	})
}

// TestHandoverRefusals: every assertion that must not open a session is
// refused with a page that says what happened, and opens none.
func TestHandoverRefusals(t *testing.T) {
	h := startHandover(t)
	ctx := context.Background()
	id, secret := h.client(t, e2eRedirect, []string{"PROFILE_READ"})
	conf := h.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
	authURL := conf.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	forger, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)

	// A genuine assertion, used once, whose jti the replay case reuses.
	jar := newJar(t)
	q := h.startLogin(t, ctx, jar, authURL)
	used := h.p.claims(q.Get("challenge"))
	if status, _, body := browse(t, jar, http.MethodGet, h.base+"/auth/login/handover?assertion="+h.p.sign(used), nil); status != http.StatusOK {
		t.Fatalf("genuine assertion: %d\n%s", status, body)
	}

	tests := []struct {
		name   string
		mutate func(c jwt.MapClaims) string // the assertion to send, from genuine claims
		noJar  bool                         // sent by a browser that never started the login
		want   string
	}{
		{"forged", func(c jwt.MapClaims) string {
			h.p.mu.Lock()
			kid := h.p.kid
			h.p.mu.Unlock()
			return signWith(t, forger, kid, c)
		}, false, "not signed by the platform"},
		{"unknown key", func(c jwt.MapClaims) string { return signWith(t, forger, "kid-nobody-knows", c) }, false, "not signed by the platform"},
		{"expired", func(c jwt.MapClaims) string {
			c["iat"], c["exp"] = time.Now().Add(-2*time.Minute).Unix(), time.Now().Add(-70*time.Second).Unix()
			return h.p.sign(c)
		}, false, "expired"},
		{"lives too long", func(c jwt.MapClaims) string {
			c["exp"] = time.Now().Add(10 * time.Minute).Unix()
			return h.p.sign(c)
		}, false, "more than a minute"},
		{"replayed", func(c jwt.MapClaims) string { c["jti"] = used["jti"]; return h.p.sign(c) }, false, "already used"},
		{"wrong audience", func(c jwt.MapClaims) string { c["aud"] = "https://other-service.example"; return h.p.sign(c) }, false, "another service"},
		{"two audiences", func(c jwt.MapClaims) string { c["aud"] = []string{h.base, "https://other.example"}; return h.p.sign(c) }, false, "another service"},
		{"wrong issuer", func(c jwt.MapClaims) string { c["iss"] = "https://evil.example"; return h.p.sign(c) }, false, "wrong issuer"},
		{"wrong challenge", func(c jwt.MapClaims) string { c["challenge"] = rand.Text() + rand.Text(); return h.p.sign(c) }, false, "another sign-in"},
		{"login CSRF: not this browser's", func(c jwt.MapClaims) string { return h.p.sign(c) }, true, "did not start this sign-in"},
		{"alg none", func(c jwt.MapClaims) string {
			s, _ := jwt.NewWithClaims(jwt.SigningMethodNone, c).SignedString(jwt.UnsafeAllowNoneSignatureType)
			return s
		}, false, "not signed by the platform"},
		{"HS256 with the public JWKS as secret", func(c jwt.MapClaims) string {
			resp, err := http.Get(h.p.URL + "/jwks.json")
			if err != nil {
				t.Fatal(err)
			}
			pub, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			tok := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
			s, _ := tok.SignedString(pub)
			return s
		}, false, "not signed by the platform"},
		{"garbage", func(jwt.MapClaims) string { return "not-a-jwt" }, false, "could not be read"},
		// What the operator reads is what the user is: a name that can
		// drive a terminal or reorder text is refused, for a known user
		// and for a new one.
		{"name with an escape sequence", func(c jwt.MapClaims) string { c["name"] = "Pat\x1b[2J\x1b[8m"; return h.p.sign(c) }, false, "the control character U+001B"},
		{"name with a forged line", func(c jwt.MapClaims) string { c["name"] = "Pat\r\nscopes: PROFILE_READ"; return h.p.sign(c) }, false, "the control character U+000D"},
		{"new user, email longer than 254 bytes", func(c jwt.MapClaims) string {
			c["sub"], c["email"] = "u-long", strings.Repeat("a", 64)+"@"+strings.Repeat("b", 63)+"."+strings.Repeat("c", 63)+"."+strings.Repeat("d", 63)+".example"
			return h.p.sign(c)
		}, false, "an email address has at most 254"},
		{"new user, name with a bidi override", func(c jwt.MapClaims) string {
			c["sub"], c["email"], c["name"] = "u-new", "new@platform.example", "Pat\u202Egnp.exe"
			return h.p.sign(c)
		}, false, "U+202E"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jar := newJar(t)
			q := h.startLogin(t, ctx, jar, authURL)
			tok := tc.mutate(h.p.claims(q.Get("challenge")))
			if tc.noJar {
				jar = newJar(t) // the victim's browser: no challenge cookie
			}
			status, at, body := browse(t, jar, http.MethodGet, h.base+"/auth/login/handover?assertion="+url.QueryEscape(tok), nil)
			if status != http.StatusBadRequest || at.Path != "/auth/login/handover" || !strings.Contains(html.UnescapeString(body), tc.want) {
				t.Fatalf("%s: %d at %s; want 400 saying %q\n%s", tc.name, status, at, tc.want, body)
			}
			// No session was opened: the authorization request still
			// goes to the platform's login.
			if _, at, _ := browse(t, jar, http.MethodGet, authURL, nil); !strings.HasPrefix(at.String(), h.p.URL+"/login") {
				t.Fatalf("after a refused assertion the browser reached %s; want the platform's login", at)
			}
		})
	}
	if _, _, body := browse(t, newJar(t), http.MethodGet, h.base+"/metrics", nil); !strings.Contains(body, `limiter="login_handover"`) {
		t.Error(`/metrics has no limiter="login_handover" series`)
	}
	// One platform user only, made by the genuine assertion.
	var users []struct {
		ExternalID string `json:"external_id"`
	}
	oneJSON(t, h.cli(t, "users", "list", "--json"), &users)
	if len(users) != 2 {
		t.Fatalf("users after the refusals: %+v; want the local user and one platform user", users)
	}
}

// TestHandoverNeverTakesOverALocalAccount: an assertion naming the email of
// a local user does not log in as that user.
func TestHandoverNeverTakesOverALocalAccount(t *testing.T) {
	h := startHandover(t)
	ctx := context.Background()
	id, secret := h.client(t, e2eRedirect, []string{"PROFILE_READ"})
	conf := h.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
	authURL := conf.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	jar := newJar(t)
	q := h.startLogin(t, ctx, jar, authURL)
	c := h.p.claims(q.Get("challenge"))
	c["sub"], c["email"] = "someone-else", e2eEmail // the local user's email
	status, _, body := browse(t, jar, http.MethodGet, h.base+"/auth/login/handover?assertion="+h.p.sign(c), nil)
	if status != http.StatusConflict || !strings.Contains(body, "already exists") {
		t.Fatalf("assertion with a local user's email: %d; want 409\n%s", status, body)
	}
	if _, at, _ := browse(t, jar, http.MethodGet, authURL, nil); !strings.HasPrefix(at.String(), h.p.URL+"/login") {
		t.Fatalf("after the refusal the browser reached %s; want the platform's login", at)
	}
}

// TestHandoverBrowser: the main flow in Chromium. The authorization URL
// leads to the platform's own login form; the user signs in there, lands
// on oauthd's consent page (with no second password), clicks Allow and
// the client gets a code that x/oauth2 exchanges.
func TestHandoverBrowser(t *testing.T) {
	bctx := consenttest.Chrome(t, 1280, 900)
	cb := &e2eCallback{}
	clientSrv := httptest.NewServer(cb)
	t.Cleanup(clientSrv.Close)
	redirectURI := clientSrv.URL + "/callback"
	h := startHandover(t)
	id, secret := h.client(t, redirectURI, []string{"PROFILE_READ"})
	conf := h.config(id, secret, redirectURI, oauth2.AuthStyleInHeader, "PROFILE_READ")
	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		consenttest.Step(t, bctx, name, actions...)
	}
	verifier := oauth2.GenerateVerifier()
	step("open the authorization URL",
		chromedp.Navigate(conf.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier))),
		chromedp.WaitVisible(chromedp.CSS(`input[name="email"]`)))
	if loc, _ := chromedp.Run(bctx, chromedp.Location()); !strings.HasPrefix(loc, h.p.URL+"/login?") {
		t.Fatalf("the authorization URL led to %s; want the platform's login page", loc)
	}
	step("sign in at the platform",
		chromedp.SendKeys(chromedp.CSS(`input[name="email"]`), platEmail),
		chromedp.SendKeys(chromedp.CSS(`input[type="password"]`), platPassword),
		chromedp.Submit(chromedp.CSS(`input[type="password"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button[value="allow"]`)))
	page, _ := chromedp.Run(bctx, chromedp.TextContent(chromedp.CSS("body")))
	if !strings.Contains(page, "Calendar Sync") || !strings.Contains(page, platEmail) {
		t.Errorf("the consent page does not name the client and the platform's user:\n%s", page)
	}
	step("allow", chromedp.Click(chromedp.CSS(`button[value="allow"]`)), chromedp.WaitVisible(chromedp.ID("back")))
	got := cb.all()
	if len(got) != 1 || got[0].Get("code") == "" || got[0].Get("state") != "st" || got[0].Get("iss") != h.base {
		t.Fatalf("the client received %v; want one redirect with code, state and iss", got)
	}
	tok, err := conf.Exchange(bctx, got[0].Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if status, body := h.me(t, tok.AccessToken); status != http.StatusOK || !strings.Contains(body, platEmail) {
		t.Fatalf("/v2/me = %d %s; want the platform's user", status, body)
	}
}
