package e2e

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
	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
)

// e2eCallback is the client's redirect endpoint: it records every query it
// receives on /callback.
type e2eCallback struct {
	mu      sync.Mutex
	queries []url.Values
}

func (cb *e2eCallback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" {
		http.NotFound(w, r)
		return
	}
	cb.mu.Lock()
	cb.queries = append(cb.queries, r.URL.Query())
	cb.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, `<!doctype html><title>client</title><p id="back">back at the client</p>`)
}

func (cb *e2eCallback) all() []url.Values {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return append([]url.Values(nil), cb.queries...)
}

// TestBrowser is issue 3's real-browser check: Chromium, driven by
// chromedp, opens an authorization URL of the real `oauthd serve`, signs in
// on the real login page, reads the scopes on the consent page, clicks
// Allow and lands on the client's redirect URI with a code that x/oauth2
// exchanges; a second run clicks Deny and lands with access_denied.
//
// OAUTHD_SCREENSHOT=1 saves oauthd-login.png and oauthd-consent.png in
// $OAUTHD_SCREENSHOT_DIR (default: the system's temporary directory).
func TestBrowser(t *testing.T) {
	bctx := consenttest.Chrome(t, 1280, 900)
	cb := &e2eCallback{}
	clientSrv := httptest.NewServer(cb)
	t.Cleanup(clientSrv.Close)
	redirectURI := clientSrv.URL + "/callback"

	e := startE2E(t)
	scopes := []string{"PROFILE_READ", "TEAM_BOOKING_READ", "ORG_MEMBERSHIP_READ"}
	id, secret := e.client(t, redirectURI, scopes)
	conf := e.config(id, secret, redirectURI, oauth2.AuthStyleInHeader, scopes...)

	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		consenttest.Step(t, bctx, name, actions...)
	}
	shot := func(file string) {
		t.Helper()
		if os.Getenv("OAUTHD_SCREENSHOT") == "1" {
			dir := os.Getenv("OAUTHD_SCREENSHOT_DIR")
			if dir == "" {
				dir = os.TempDir()
			}
			consenttest.Screenshot(t, bctx, filepath.Join(dir, file), 1280, 900, false)
		}
	}

	// 1. No session: the authorization URL leads to the login page.
	verifier := oauth2.GenerateVerifier()
	step("open the authorization URL",
		chromedp.Navigate(conf.AuthCodeURL("allow-state", oauth2.S256ChallengeOption(verifier))),
		chromedp.WaitVisible(chromedp.CSS(`input[type="password"]`)))
	loc, _ := chromedp.Run(bctx, chromedp.Location())
	if !strings.HasPrefix(loc, e.base+"/auth/login") {
		t.Errorf("the authorization URL led to %s; want the login page", loc)
	}
	shot("oauthd-login.png")
	step("sign in",
		chromedp.SendKeys(chromedp.CSS(`input[name="login"]`), e2eEmail),
		chromedp.SendKeys(chromedp.CSS(`input[type="password"]`), e2ePassword),
		chromedp.Submit(chromedp.CSS(`input[type="password"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button[value="allow"]`)))

	// 2. The consent page names the client, its owner and every scope in
	// plain language.
	page, err := chromedp.Run(bctx, chromedp.TextContent(chromedp.CSS("body")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Calendar Sync wants to access your account", e2eEmail,
		"View your profile.", "View team bookings.", "View memberships and users of the organization.",
		"PROFILE_READ", "TEAM_BOOKING_READ", "ORG_MEMBERSHIP_READ",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the consent page does not show %q; its text:\n%s", want, page)
		}
	}
	shot("oauthd-consent.png")

	// 3. Allow: the browser lands on the client with a code, state and iss.
	step("allow", chromedp.Click(chromedp.CSS(`button[value="allow"]`)), chromedp.WaitVisible(chromedp.ID("back")))
	loc, _ = chromedp.Run(bctx, chromedp.Location())
	if !strings.HasPrefix(loc, redirectURI+"?") {
		t.Errorf("after Allow the browser is at %s; want %s?…", loc, redirectURI)
	}
	got := cb.all()
	if len(got) != 1 || got[0].Get("code") == "" || got[0].Get("state") != "allow-state" || got[0].Get("iss") != e.base {
		t.Fatalf("the client received %v; want one redirect with code, state and iss", got)
	}
	tok, err := conf.Exchange(bctx, got[0].Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange of the browser's code: %v", err)
	}
	if tok.Extra("scope") != strings.Join(scopes, " ") {
		t.Errorf("token scope %v; want %q", tok.Extra("scope"), strings.Join(scopes, " "))
	}
	e.wantMe(t, tok.AccessToken)

	// 4. Again, still signed in: straight to the consent page; Deny.
	step("open the authorization URL again",
		chromedp.Navigate(conf.AuthCodeURL("deny-state", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))),
		chromedp.WaitVisible(chromedp.CSS(`button[value="deny"]`)))
	step("deny", chromedp.Click(chromedp.CSS(`button[value="deny"]`)), chromedp.WaitVisible(chromedp.ID("back")))
	got = cb.all()
	if len(got) != 2 || got[1].Get("error") != "access_denied" || got[1].Get("state") != "deny-state" ||
		got[1].Get("iss") != e.base || got[1].Has("code") {
		t.Errorf("the client received %v; want a second redirect with error=access_denied, state and iss", got)
	}
}
