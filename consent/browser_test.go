package consent

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/labstack/echo/v4"
)

// findChromium returns the browser to drive: $OAUTHD_CHROMIUM, or Debian's
// chromium. Without one the test skips, except in CI (CI=true) where it
// fails: the browser test must run there.
func findChromium(t *testing.T) string {
	t.Helper()
	cands := []string{os.Getenv("OAUTHD_CHROMIUM"), "/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"}
	for _, c := range cands {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found (install Debian's chromium or set OAUTHD_CHROMIUM); the browser test must run in CI")
	}
	t.Skip("chromium not found: skipping the browser test (install Debian's chromium or set OAUTHD_CHROMIUM)")
	return ""
}

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
	chromium := findChromium(t)

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

	dir, err := os.MkdirTemp("", "oauthd-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Chromium's children may still write for a moment after it exits.
		for range 50 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	actx, cancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1280, 900),
	)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()

	q := authorizeQuery()
	q.Set("redirect_uri", redirectURI)
	q.Set("state", "allow-state")
	authorizeURL := appSrv.URL + authorizePath + "?" + q.Encode()

	// Start the browser with the long-lived context; each step then gets its
	// own timeout, and a failing step reports where the browser is.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	step := func(name string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			loc, _ := chromedp.Run(bctx, chromedp.Location())
			body, _ := chromedp.Run(bctx, chromedp.OuterHTML(chromedp.CSS("body"), chromedp.AtLeast(0)))
			t.Fatalf("%s: %v\nbrowser at %s\n%s", name, err, loc, body)
		}
	}

	// 1. Not logged in: the authorize URL lands on the login form.
	step("open authorize URL", chromedp.Navigate(authorizeURL), chromedp.WaitVisible(chromedp.ID("login")))
	step("log in",
		chromedp.SendKeys(chromedp.ID("login"), "alice@example.com"),
		chromedp.SendKeys(chromedp.ID("password"), alicePassword),
		chromedp.Click(chromedp.CSS(`form.form button[type="submit"]`)),
	)
	step("see consent page", chromedp.WaitVisible(chromedp.CSS(`form.decision`)))
	// TextContent, not Text: innerText applies the headings' text-transform.
	card, err := chromedp.Run(bctx, chromedp.TextContent(chromedp.CSS("section.card")))
	if err != nil {
		t.Fatal(err)
	}
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
		screenshot(t, bctx, "consent.png", 1280, 900, false)
		screenshot(t, bctx, "consent-390.png", 390, 844, true)
		screenshot(t, bctx, "", 1280, 900, false) // restore
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

// screenshot saves a full-page PNG of the current page at the given width to
// testdata/name (or only resizes when name is "").
func screenshot(t *testing.T, ctx context.Context, name string, w, h int64, mobile bool) {
	t.Helper()
	opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
	if mobile {
		opts = []chromedp.EmulateViewportOption{chromedp.EmulateScale(2), chromedp.EmulatePortrait, chromedp.EmulateMobile}
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, h, opts...)); err != nil {
		t.Fatal(err)
	}
	if name == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", name), png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote testdata/%s", name)
}
