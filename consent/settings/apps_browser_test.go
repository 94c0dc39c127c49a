package settings

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/labstack/echo/v4"

	"oauthd/consent/consenttest"
	"oauthd/data"
)

// TestAppsBrowser drives a real Chromium through Connected apps, at
// desktop width and at a phone's (390 px): log in (returned to the page),
// see the apps, remove one with its button (no JavaScript is needed: the
// page has none, and JavaScript is off for the removal), see the
// confirmation naming it, then the empty state. At each width the page
// must not scroll sideways. With OAUTHD_SCREENSHOT=1 it saves
// testdata/apps.png and testdata/apps-390.png (the list) and, in
// $OAUTHD_SCREENSHOT_DIR (default the temp dir), the confirmation and the
// empty state at both widths.
func TestAppsBrowser(t *testing.T) {
	e := echo.New()
	appSrv := httptest.NewServer(e)
	defer appSrv.Close()
	en := newEnv(t, appSrv.URL, e, nil)
	sync, legacy, rejected, _ := en.appsFixture()

	bctx := consenttest.Chrome(t, 1280, 1000)
	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		consenttest.Step(t, bctx, name, actions...)
	}
	text := func() string { t.Helper(); return consenttest.Text(t, bctx, "section.card") }
	// noSideScroll fails when the page is wider than the viewport.
	noSideScroll := func(what string) {
		t.Helper()
		w, err := chromedp.Run(bctx, chromedp.Evaluate[[]int]("[document.documentElement.scrollWidth, window.innerWidth]"))
		if err != nil {
			t.Fatal(err)
		}
		if len(w) != 2 || w[0] > w[1] {
			t.Errorf("%s: the page is %d px wide in a %d px viewport", what, w[0], w[1])
		}
	}
	shots := os.Getenv("OAUTHD_SCREENSHOT") == "1"
	shotDir := os.Getenv("OAUTHD_SCREENSHOT_DIR")
	if shotDir == "" {
		shotDir = os.TempDir()
	}
	// atBothWidths checks the page at 1280 and at 390 px (a phone), and
	// saves screenshots named name.png and name-390.png in dir.
	atBothWidths := func(dir, name string) {
		t.Helper()
		for _, w := range []struct {
			w, h   int64
			mobile bool
			suffix string
		}{{1280, 1000, false, ""}, {390, 844, true, "-390"}} {
			path := ""
			if shots {
				path = filepath.Join(dir, name+w.suffix+".png")
			}
			consenttest.Screenshot(t, bctx, path, w.w, w.h, w.mobile)
			noSideScroll(name + w.suffix)
		}
		consenttest.Screenshot(t, bctx, "", 1280, 1000, false)
	}

	// Pages' scripts off for the whole visit: login, list and removal are
	// plain forms (the page ships no script; its CSP allows none anyway).
	step("JavaScript off", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	}))
	step("open Connected apps", chromedp.Navigate(appSrv.URL+appsPath), chromedp.WaitVisible(chromedp.ID("login")))
	step("log in",
		chromedp.SendKeys(chromedp.ID("login"), "alice@example.com"),
		chromedp.SendKeys(chromedp.ID("password"), alicePassword),
		chromedp.Click(chromedp.CSS(`form.form button[type="submit"]`)),
	)
	step("see the apps", chromedp.WaitVisible(chromedp.CSS(`ul.app-list`)))
	list := text()
	for _, want := range []string{"Acme Calendar Sync", "dev@acme.example", "List your bookings", "Full access to your account",
		"Booking Exporter", "Blocked by the platform", "Last used"} {
		if !strings.Contains(list, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, not := range []string{"Waiting App", "Bob's Planner"} {
		if strings.Contains(list, not) {
			t.Errorf("the page shows %q", not)
		}
	}
	atBothWidths("testdata", "apps")

	step("remove Acme", chromedp.Click(chromedp.CSS(`li#app-`+sync+` form.remove button`)),
		chromedp.WaitVisible(chromedp.CSS(`div.alert-ok`)))
	after := text()
	if !strings.Contains(after, "Acme Calendar Sync no longer has access to your account") {
		t.Errorf("no confirmation naming the app: %s", after)
	}
	if strings.Contains(after, "dev@acme.example") {
		t.Error("the removed app is still listed")
	}
	if loc, _ := chromedp.Run(bctx, chromedp.Location()); !strings.Contains(loc, appsPath+"?") || !strings.Contains(loc, "removed="+sync) {
		t.Errorf("after the removal the browser is at %s; want the page again (post/redirect/get)", loc)
	}
	if _, err := en.store.GetFamily(context.Background(), "fam-sync"); err == nil {
		t.Error("the app's grant survived the removal")
	}
	atBothWidths(shotDir, "apps-removed")

	for _, id := range []string{legacy, rejected} {
		// The page before this removal shows an alert too: wait for the app
		// to be gone from the page, then for the alert.
		step("remove "+id, chromedp.Click(chromedp.CSS(`li#app-`+id+` form.remove button`)),
			chromedp.WaitNotPresent(chromedp.CSS(`li#app-`+id)), chromedp.WaitVisible(chromedp.CSS(`div.alert-ok`)))
	}
	step("empty", chromedp.WaitVisible(chromedp.CSS(`p.empty`)))
	if !strings.Contains(text(), "No apps can use your account") {
		t.Error("no empty-state sentence")
	}
	atBothWidths(shotDir, "apps-empty")
	if apps, _ := en.adm.ListUserApps(context.Background(), userRef(en.alice)); len(apps) != 0 {
		t.Errorf("apps left after removing all: %+v", apps)
	}
	if _, err := en.store.GetFamily(context.Background(), "fam-legacy"); !errors.Is(err, data.ErrNotFound) {
		t.Errorf("the legacy app's grant after its removal: %v", err)
	}
}
