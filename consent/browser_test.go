package consent

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/labstack/echo/v4"

	"oauthd/consent/consenttest"
)

// callbackRecorder is the client's redirect endpoint: it records the
// queries it receives.
type callbackRecorder struct {
	mu      sync.Mutex
	queries []url.Values
}

func (cr *callbackRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" { // e.g. /favicon.ico
		http.NotFound(w, r)
		return
	}
	cr.mu.Lock()
	cr.queries = append(cr.queries, r.URL.Query())
	cr.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, `<!doctype html><title>callback</title><p id="done">back at the client</p>`)
}

func (cr *callbackRecorder) last() url.Values {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if len(cr.queries) == 0 {
		return nil
	}
	return cr.queries[len(cr.queries)-1]
}

// TestBrowserFlow drives a real Chromium through login, consent and both
// decisions. The client's callback is on another origin, so it also checks
// that the CSP's form-action lets the browser follow the 303 after the POST.
func TestBrowserFlow(t *testing.T) {
	cb := &callbackRecorder{}
	clientSrv := httptest.NewServer(cb)
	defer clientSrv.Close()
	redirectURI := clientSrv.URL + "/callback"

	en := newEnv(t, "") // store, users and fake authorizer
	client := testClient
	client.RedirectURIs = []string{redirectURI}
	client.Name = `Acme <Calendar> Sync`
	en.authz.parse = defaultParse(client)
	en.authz.approve = func(q url.Values, _ int64) (string, error) {
		return q.Get("redirect_uri") + "?code=oauthd_ac_browser&state=" + url.QueryEscape(q.Get("state")), nil
	}

	e := echo.New()
	appSrv := httptest.NewUnstartedServer(e)
	appSrv.Start()
	defer appSrv.Close()
	h, err := New(Config{Store: en.store, Authorizer: en.authz, AppURL: appSrv.URL, Now: en.clock})
	if err != nil {
		t.Fatal(err)
	}
	h.Register(e)

	bctx := consenttest.Chrome(t, 1280, 900)

	q := authorizeQuery()
	q.Set("redirect_uri", redirectURI)
	q.Set("state", "allow-state")
	authorizeURL := appSrv.URL + authorizePath + "?" + q.Encode()

	// Each step gets its own timeout, and a failing step reports where the
	// browser is.
	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		consenttest.Step(t, bctx, name, actions...)
	}

	// 1. Not logged in: the authorize URL lands on the login form.
	step("open authorize URL", chromedp.Navigate(authorizeURL), chromedp.WaitVisible(chromedp.ID("login")))
	step("log in",
		chromedp.SendKeys(chromedp.ID("login"), "alice@example.com"),
		chromedp.SendKeys(chromedp.ID("password"), alicePassword),
		chromedp.Click(chromedp.CSS(`form.form button[type="submit"]`)),
	)
	step("see consent page", chromedp.WaitVisible(chromedp.CSS(`form.decision`)))
	card := consenttest.Text(t, bctx, "section.card")
	for _, want := range []string{
		"Acme <Calendar> Sync wants to access your account", // shown as text, not markup
		"Signed in as Alice Example",
		"Your account", "View your profile.",
		"Your teams", "View team bookings.",
		"Your organization", "View memberships and users of the organization.",
		"You will be sent to " + clientSrv.URL,
	} {
		if !strings.Contains(card, want) {
			t.Errorf("consent page text lacks %q; text:\n%s", want, card)
		}
	}
	if os.Getenv("OAUTHD_SCREENSHOT") == "1" {
		consenttest.Screenshot(t, bctx, filepath.Join("testdata", "consent.png"), 1280, 900, false)
		consenttest.Screenshot(t, bctx, filepath.Join("testdata", "consent-390.png"), 390, 844, true)
		consenttest.Screenshot(t, bctx, "", 1280, 900, false) // restore
	}

	// 2. Allow: the browser ends on the client's callback with a code.
	step("allow", chromedp.Click(chromedp.CSS(`button[value="allow"]`)), chromedp.WaitVisible(chromedp.ID("done")))
	loc, _ := chromedp.Run(bctx, chromedp.Location())
	if !strings.HasPrefix(loc, redirectURI+"?") {
		t.Errorf("after Allow the browser is at %q; want %s?…", loc, redirectURI)
	}
	if got := cb.last(); got.Get("code") != "oauthd_ac_browser" || got.Get("state") != "allow-state" {
		t.Errorf("callback query after Allow = %v; want code and state", got)
	}
	if a, _ := en.authz.counts(); a != 1 || en.authz.approvals[0].UserID != en.alice.ID {
		t.Errorf("approvals = %d; want 1 for alice", a)
	}

	// 3. Second run, still signed in: straight to consent; Deny.
	q.Set("state", "deny-state")
	step("open authorize URL again", chromedp.Navigate(appSrv.URL+authorizePath+"?"+q.Encode()),
		chromedp.WaitVisible(chromedp.CSS(`form.decision`)))
	step("deny", chromedp.Click(chromedp.CSS(`button[value="deny"]`)), chromedp.WaitVisible(chromedp.ID("done")))
	if got := cb.last(); got.Get("error") != "access_denied" || got.Get("state") != "deny-state" || got.Has("code") {
		t.Errorf("callback query after Deny = %v; want error=access_denied and state, no code", got)
	}
	if a, d := en.authz.counts(); a != 1 || d != 1 {
		t.Errorf("approvals, denials = %d, %d; want 1, 1", a, d)
	}
}
