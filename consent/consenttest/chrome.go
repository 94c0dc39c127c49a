package consenttest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromeTimeout bounds a whole [Chrome] session.
const ChromeTimeout = 2 * time.Minute

// StepTimeout bounds one [Step].
const StepTimeout = 20 * time.Second

// FindChromium returns the browser to drive: $OAUTHD_CHROMIUM, Debian's
// /usr/bin/chromium, or chromium, chromium-browser or google-chrome on the
// PATH. Without one (or with OAUTHD_CHROMIUM=none) t skips, and [Main]
// prints one line about it; in CI (CI=true) t fails instead: the browser
// tests must run there. t must be one of the browser tests listed in this
// package, so that the line names it.
func FindChromium(t testing.TB) string {
	if testing.Short() {
		t.Skip("-short: the browser tests run without -short")
	}
	t.Helper()
	listed(t)
	env := os.Getenv("OAUTHD_CHROMIUM")
	for _, c := range []string{env, "/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if c == "" || env == "none" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found: the browser test must run in CI; " + HowToRunBrowserTests)
	}
	skipBrowser(t)
	return ""
}

// Chrome starts a headless Chromium (see [FindChromium]) with a window of
// width×height, a fresh profile and no background traffic, and returns the
// chromedp context of its tab, which ends after [ChromeTimeout] or with t.
// The browser is stopped and its profile removed when t ends.
func Chrome(t testing.TB, width, height int) context.Context {
	t.Helper()
	chromium := FindChromium(t)
	dir, err := os.MkdirTemp("", "oauthd-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last-in first-out: the browser stops before its profile
	// is removed.
	t.Cleanup(func() {
		// Chromium's children may still write for a moment after it exits.
		for range 50 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), ChromeTimeout)
	t.Cleanup(cancel)
	actx, cancelA := chromedp.NewExecAllocator(ctx,
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
		chromedp.WindowSize(width, height),
	)
	t.Cleanup(cancelA)
	bctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(cancelB)
	// Start the browser with the long-lived context; each Step then gets its
	// own timeout.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// Step runs the actions in the browser of ctx (from [Chrome]) within
// [StepTimeout]; when they fail, t fails with the page's address and body.
func Step(t testing.TB, ctx context.Context, name string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, StepTimeout)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		body, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body"), chromedp.AtLeast(0)))
		t.Fatalf("%s: %v\nbrowser at %s\n%s", name, err, loc, body)
	}
}

// Text is the text content of the first element css selects on the
// current page of the browser of ctx (TextContent, not innerText, which
// would apply the headings' text-transform); t fails when it cannot be read.
func Text(t testing.TB, ctx context.Context, css string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(css)))
	if err != nil {
		t.Fatalf("text of %s: %v", css, err)
	}
	return s
}

// Screenshot sets the viewport of the browser of ctx to w×h (mobile: a
// phone's, at scale 2) and, unless path is "", saves a full-page PNG of the
// current page to path.
func Screenshot(t testing.TB, ctx context.Context, path string, w, h int64, mobile bool) {
	t.Helper()
	opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
	if mobile {
		opts = []chromedp.EmulateViewportOption{chromedp.EmulateScale(2), chromedp.EmulatePortrait, chromedp.EmulateMobile}
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, h, opts...)); err != nil {
		t.Fatal(err)
	}
	if path == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}
