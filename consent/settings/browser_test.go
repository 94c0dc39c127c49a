package settings

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/labstack/echo/v4"

	"oauthd/consent/consenttest"
	"oauthd/data"
)

// TestSettingsBrowser drives a real Chromium through the client settings:
// log in (returned to the settings), open a client, generate a secret (shown
// once), and register a new client. With OAUTHD_SCREENSHOT=1 it saves
// testdata/settings.png (the detail page) and, in $OAUTHD_SCREENSHOT_DIR
// (default the temp dir), the list, form and phone-sized views.
func TestSettingsBrowser(t *testing.T) {
	ctx := context.Background()
	e := echo.New()
	appSrv := httptest.NewServer(e)
	defer appSrv.Close()
	en := newEnv(t, appSrv.URL, e, nil)
	now := en.clock()
	used := now.Add(-3 * time.Hour)
	for _, c := range []data.Client{
		{ID: "c0ffee0000000001", Name: "Acme <Calendar> Sync", OwnerID: en.alice.ID, Type: data.Confidential,
			RedirectURIs: []string{"https://app.acme.example/callback", "http://localhost:8080/callback"},
			Scopes:       []string{"BOOKING_READ", "PROFILE_READ", "TEAM_BOOKING_READ"}, Status: data.StatusApproved,
			Secrets: []data.ClientSecret{{ID: "cs_7Hq2xLm9a", Hash: data.Hash("a"), CreatedAt: now.AddDate(0, -2, 0), LastUsedAt: used}}},
		{ID: "c0ffee0000000002", Name: "Team Planner (mobile)", OwnerID: en.alice.ID, Type: data.Public,
			RedirectURIs: []string{"https://planner.example/cb"}, Scopes: []string{"SCHEDULE_READ"}, Status: data.StatusPending},
		{ID: "c0ffee0000000003", Name: "Booking Exporter", OwnerID: en.alice.ID, Type: data.Confidential,
			RedirectURIs: []string{"https://export.example/cb"}, Scopes: []string{"ORG_BOOKING_READ"}, Status: data.StatusRejected,
			RejectReason: "Organization-wide booking access needs a signed data processing agreement.",
			Secrets:      []data.ClientSecret{{ID: "cs_000000003", Hash: data.Hash("c"), CreatedAt: now}}},
		{ID: "legacy-importer", Name: "Old Importer", OwnerID: en.alice.ID, Type: data.Confidential,
			RedirectURIs: []string{"https://old.example/cb"}, Legacy: true, Status: data.StatusApproved,
			Secrets: []data.ClientSecret{{ID: "cs_000000004", Hash: data.Hash("d"), CreatedAt: now.AddDate(-1, 0, 0), LastUsedAt: used}},
			Usage:   []data.UsageDay{{Day: now.AddDate(0, 0, -2).Format("2006-01-02"), WithScope: 41, WithoutScope: 7}}},
		{ID: "b0b0000000000001", Name: "Bob's", OwnerID: en.bob.ID, Type: data.Public,
			RedirectURIs: []string{"https://bob.example/cb"}, Scopes: []string{"PROFILE_READ"}, Status: data.StatusPending},
	} {
		c.CreatedAt, c.UpdatedAt = now, now
		if err := en.store.CreateClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}

	bctx := consenttest.Chrome(t, 1280, 1100)
	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		consenttest.Step(t, bctx, name, actions...)
	}
	text := func() string { t.Helper(); return consenttest.Text(t, bctx, "section.card") }
	shots := os.Getenv("OAUTHD_SCREENSHOT") == "1"
	shotDir := os.Getenv("OAUTHD_SCREENSHOT_DIR")
	if shotDir == "" {
		shotDir = os.TempDir()
	}
	shot := func(path string, w, h int64, mobile bool) {
		t.Helper()
		if !shots {
			return
		}
		consenttest.Screenshot(t, bctx, path, w, h, mobile)
		if mobile { // the first screen, readable at full size
			top, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(strings.TrimSuffix(path, ".png")+"-top.png", top, 0o644); err != nil {
				t.Fatal(err)
			}
			if sec, err := chromedp.Run(bctx, chromedp.Screenshot(chromedp.ID("secrets"), chromedp.AtLeast(0))); err == nil && len(sec) > 0 {
				_ = os.WriteFile(strings.TrimSuffix(path, ".png")+"-secrets.png", sec, 0o644)
			}
		}
		consenttest.Screenshot(t, bctx, "", 1280, 1100, false) // restore
	}

	// 1. Not signed in: the settings send the browser to the login page,
	// which returns it to the settings.
	step("open settings", chromedp.Navigate(appSrv.URL+clientsPath), chromedp.WaitVisible(chromedp.ID("login")))
	step("log in",
		chromedp.SendKeys(chromedp.ID("login"), "alice@example.com"),
		chromedp.SendKeys(chromedp.ID("password"), alicePassword),
		chromedp.Click(chromedp.CSS(`form.form button[type="submit"]`)),
	)
	step("see list", chromedp.WaitVisible(chromedp.CSS(`ul.client-list`)))
	list := text()
	for _, want := range []string{"Acme <Calendar> Sync", "Team Planner (mobile)", "Pending review", "Rejected", "Legacy", "Old Importer"} {
		if !strings.Contains(list, want) {
			t.Errorf("list lacks %q", want)
		}
	}
	if strings.Contains(list, "Bob's") {
		t.Error("list shows bob's client")
	}
	shot(filepath.Join(shotDir, "settings-list.png"), 1280, 1100, false)
	shot(filepath.Join(shotDir, "settings-list-390.png"), 390, 844, true)

	// 2. The detail page; generate a second secret: shown once.
	step("open client", chromedp.Click(chromedp.CSS(`a[href="/settings/clients/c0ffee0000000001"]`)),
		chromedp.WaitVisible(chromedp.ID("secrets")))
	// The only secret's Revoke is disabled, its reason beside it; the
	// protections, unchecked, read as choices, not as red warnings.
	var shown struct {
		RevokeDisabled bool   `json:"revokeDisabled"`
		Why            string `json:"why"`
		ChoiceBG       string `json:"choiceBG"`
		ChoiceColor    string `json:"choiceColor"`
		AlertColor     string `json:"alertColor"`
	}
	probe := func() {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[json.RawMessage](`(() => {
			const b = document.querySelector('#secrets td.action button');
			const why = document.getElementById(b.getAttribute('aria-describedby') || 'none');
			const l = document.querySelector('#protections label');
			const a = document.createElement('p'); a.className = 'alert alert-danger'; document.body.append(a);
			const r = {revokeDisabled: b.disabled, why: why ? why.textContent : '',
				choiceBG: getComputedStyle(l).backgroundColor, choiceColor: getComputedStyle(l).color, alertColor: getComputedStyle(a).color};
			a.remove();
			return r;
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(v, &shown); err != nil {
			t.Fatal(err)
		}
	}
	probe()
	if !shown.RevokeDisabled || !strings.Contains(shown.Why, "only secret") {
		t.Errorf("the only secret's Revoke: disabled %v, reason %q; want disabled with the reason beside it", shown.RevokeDisabled, shown.Why)
	}
	if shown.ChoiceBG != "rgba(0, 0, 0, 0)" || shown.ChoiceColor == shown.AlertColor {
		t.Errorf("an unchecked protection: background %s, color %s (an error's color %s); want a plain choice", shown.ChoiceBG, shown.ChoiceColor, shown.AlertColor)
	}
	step("generate", chromedp.Click(chromedp.CSS(`form.generate button`)), chromedp.WaitVisible(chromedp.CSS(`code.secret`)))
	secret, err := chromedp.Run(bctx, chromedp.TextContent(chromedp.CSS(`code.secret`)))
	if err != nil || !strings.HasPrefix(secret, data.PrefixClientSecret) {
		t.Fatalf("new secret %q, %v", secret, err)
	}
	if c, _ := en.store.GetClient(ctx, "c0ffee0000000001"); len(c.Secrets) != 2 || !data.Equal(c.Secrets[1].Hash, data.Hash(secret)) {
		t.Errorf("stored secrets %+v", c.Secrets)
	}
	if os.Getenv("OAUTHD_SCREENSHOT") == "1" {
		shot(filepath.Join("testdata", "settings.png"), 1280, 1100, false)
		shot(filepath.Join(shotDir, "settings-client-390.png"), 390, 844, true)
	}
	step("back to the client", chromedp.Navigate(appSrv.URL+clientsPath+"/c0ffee0000000001"), chromedp.WaitVisible(chromedp.ID("secrets")))
	probe()
	if shown.RevokeDisabled {
		t.Error("with two secrets, Revoke is still disabled")
	}
	// The generate button is now disabled, with the explanation.
	if !strings.Contains(text(), "revoke one first") {
		t.Error("no explanation for the disabled button")
	}

	// 3. Widen the approved client as its owner: a new redirect URI and a
	// new scope wait for review, shown plainly; the client keeps its
	// approved settings.
	step("add a redirect URI",
		chromedp.SetValue(chromedp.ID("redirect_uris"), "https://app.acme.example/callback\nhttp://localhost:8080/callback\nhttps://new.acme.example/cb"),
		chromedp.Click(chromedp.CSS(`#redirect-uris button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID("pending-change")))
	step("add a scope",
		chromedp.Click(chromedp.CSS(`#scopes input[value="SCHEDULE_READ"]`)),
		chromedp.Click(chromedp.CSS(`#scopes button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#scopes .badge-pending`)))
	page := text()
	for _, want := range []string{"Saved for review:", "Your change is not in force yet", "Until then the client works only with its approved settings",
		"https://new.acme.example/cb", "Change waiting for review"} {
		if !strings.Contains(page, want) {
			t.Errorf("page with a pending change lacks %q", want)
		}
	}
	if c, _ := en.store.GetClient(ctx, "c0ffee0000000001"); len(c.RedirectURIs) != 2 || len(c.Scopes) != 3 || c.Pending == nil ||
		strings.Join(c.Pending.AddRedirectURIs, " ") != "https://new.acme.example/cb" || strings.Join(c.Pending.AddScopes, " ") != "SCHEDULE_READ" {
		t.Errorf("stored client after widening edits: %+v, pending %+v", c, c.Pending)
	}
	shot(filepath.Join(shotDir, "settings-pending.png"), 1280, 1100, false)
	shot(filepath.Join(shotDir, "settings-pending-390.png"), 390, 844, true)

	// 4. The legacy client's migration panel.
	step("open legacy", chromedp.Navigate(appSrv.URL+clientsPath+"/legacy-importer"), chromedp.WaitVisible(chromedp.ID("migration")))
	shot(filepath.Join(shotDir, "settings-legacy.png"), 1280, 1100, false)

	// 5. Register a new client.
	step("open form", chromedp.Navigate(appSrv.URL+newClientPath), chromedp.WaitVisible(chromedp.ID("name")))
	shot(filepath.Join(shotDir, "settings-new.png"), 1280, 1100, false)
	step("fill form",
		chromedp.SendKeys(chromedp.ID("name"), "Browser Made"),
		chromedp.SendKeys(chromedp.ID("redirect_uris"), "https://made.example/cb"),
		chromedp.Click(chromedp.CSS(`input[value="PROFILE_READ"]`)),
		chromedp.Click(chromedp.CSS(`form.form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`code.secret`)),
	)
	if page := text(); !strings.Contains(page, "Copy it now; it cannot be shown again.") || !strings.Contains(page, "pending review by a platform administrator") {
		t.Errorf("created page text:\n%s", page)
	}
	shot(filepath.Join(shotDir, "settings-created.png"), 1280, 1100, false)
}
