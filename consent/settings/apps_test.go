package settings

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"oauthd/consent/consenttest"
	"oauthd/data"
)

// connect stores what allowing client id leaves for user u: the consent
// grant at allowed and, unless lastUsed is zero, a refresh-token family
// fam last rotated then.
func (se *settingsEnv) connect(u data.User, id, fam string, scopes []string, unrestricted bool, allowed, lastUsed time.Time) {
	se.t.Helper()
	ctx := context.Background()
	if err := se.store.PutGrant(ctx, data.Grant{UserID: u.ID, ClientID: id, Scopes: scopes, CreatedAt: allowed, UpdatedAt: allowed, Stamped: true}); err != nil {
		se.t.Fatal(err)
	}
	if lastUsed.IsZero() {
		return
	}
	code := data.AuthCodeKey(data.PrefixAuthCode + fam)
	if err := se.store.CreateAuthCode(ctx, data.AuthCode{Hash: code, ClientID: id, UserID: u.ID, Scopes: scopes, Unrestricted: unrestricted,
		CreatedAt: allowed, ExpiresAt: allowed.Add(time.Minute)}); err != nil {
		se.t.Fatal(err)
	}
	if _, _, err := se.store.ExchangeAuthCode(ctx, code, func(data.AuthCode) (data.Family, error) {
		return data.Family{ID: fam, ClientID: id, UserID: u.ID, Scopes: scopes, Unrestricted: unrestricted, TokenHash: data.Hash(fam),
			CreatedAt: allowed, RotatedAt: lastUsed, ExpiresAt: lastUsed.Add(30 * 24 * time.Hour), AbsoluteExp: allowed.Add(365 * 24 * time.Hour)}, nil
	}); err != nil {
		se.t.Fatal(err)
	}
}

// appsFixture registers clients by carol (a developer) and connects alice
// to three of them and bob to one; it returns the client IDs.
func (se *settingsEnv) appsFixture() (sync, legacy, rejected, bobs string) {
	se.t.Helper()
	ctx := context.Background()
	now := se.clock()
	for _, c := range []data.Client{
		{ID: "c0ffee0000000001", Name: "Acme Calendar Sync", UnclaimedOwner: "dev@acme.example", Type: data.Confidential,
			RedirectURIs: []string{"https://app.acme.example/callback"}, Scopes: []string{"BOOKING_READ", "PROFILE_READ", "TEAM_BOOKING_READ"},
			Status: data.StatusApproved, Secrets: []data.ClientSecret{{ID: "cs_1", Hash: data.Hash("a"), CreatedAt: now}}},
		{ID: "legacy-importer", Name: "old importer", UnclaimedOwner: "it@oldco.example", Type: data.Confidential,
			RedirectURIs: []string{"https://old.example/cb"}, Legacy: true, Status: data.StatusApproved,
			Secrets: []data.ClientSecret{{ID: "cs_2", Hash: data.Hash("b"), CreatedAt: now}}},
		{ID: "c0ffee0000000003", Name: "Booking Exporter", UnclaimedOwner: "ops@export.example", Type: data.Public,
			RedirectURIs: []string{"https://export.example/cb"}, Scopes: []string{"BOOKING_READ"}, Status: data.StatusRejected,
			RejectReason: "abuse"},
		{ID: "c0ffee0000000004", Name: "Bob's Planner", UnclaimedOwner: "dev@planner.example", Type: data.Public,
			RedirectURIs: []string{"https://planner.example/cb"}, Scopes: []string{"SCHEDULE_READ"}, Status: data.StatusApproved},
		{ID: "c0ffee0000000005", Name: "Waiting App", UnclaimedOwner: "dev@wait.example", Type: data.Public,
			RedirectURIs: []string{"https://wait.example/cb"}, Scopes: []string{"SCHEDULE_READ"}, Status: data.StatusPending},
	} {
		c.CreatedAt, c.UpdatedAt = now, now
		if err := se.store.CreateClient(ctx, c); err != nil {
			se.t.Fatal(err)
		}
	}
	se.connect(se.alice, "c0ffee0000000001", "fam-sync", []string{"BOOKING_READ", "PROFILE_READ", "TEAM_BOOKING_READ"}, false,
		now.AddDate(0, -3, 0), now.Add(-2*time.Hour))
	se.connect(se.alice, "legacy-importer", "fam-legacy", nil, true, now.AddDate(-1, 0, 0), now.AddDate(0, 0, -6))
	se.connect(se.alice, "c0ffee0000000003", "", []string{"BOOKING_READ"}, false, now.AddDate(0, -1, 0), time.Time{})
	se.connect(se.alice, "c0ffee0000000005", "", []string{"SCHEDULE_READ"}, false, now, time.Time{}) // pending: never shown
	se.connect(se.bob, "c0ffee0000000004", "fam-bob", []string{"SCHEDULE_READ"}, false, now.AddDate(0, 0, -1), now.Add(-time.Hour))
	return "c0ffee0000000001", "legacy-importer", "c0ffee0000000003", "c0ffee0000000004"
}

func TestAppsLoginRequired(t *testing.T) {
	se := newSettingsEnv(t)
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, appsPath},
		{http.MethodPost, appsPath + "/c0ffee0000000001/revoke"},
	} {
		var rec *httptest.ResponseRecorder
		if tc.method == http.MethodGet {
			rec = se.get(tc.path)
		} else {
			rec = se.post(tc.path, url.Values{})
		}
		want := loginPath + "?return_to=" + url.QueryEscape(appsPath)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != want {
			t.Errorf("%s %s without session = %d %q; want 303 %q", tc.method, tc.path, rec.Code, rec.Header().Get("Location"), want)
		}
	}
}

// TestAppsGolden: the list, the empty state and the confirmation.
func TestAppsGolden(t *testing.T) {
	se := newSettingsEnv(t)
	sync, _, _, _ := se.appsFixture()
	sess, csrf := se.sessionWith(se.alice, fixedSession, fixedCSRF)
	rec := se.get(appsPath, sess)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s = %d", appsPath, rec.Code)
	}
	checkPageHeaders(t, rec)
	checkGolden(t, "apps_list", rec.Body.Bytes())
	body := rec.Body.String()
	for _, not := range []string{"Waiting App", "Bob&#39;s Planner", "fam-"} {
		if strings.Contains(body, not) {
			t.Errorf("the list shows %q", not)
		}
	}

	rec = se.post(appsPath+"/"+sync+"/revoke", url.Values{csrfField: {csrf}}, sess)
	if rec.Code != http.StatusSeeOther || !strings.HasPrefix(rec.Header().Get("Location"), appsPath+"?") {
		t.Fatalf("remove = %d %q; want 303 to the page", rec.Code, rec.Header().Get("Location"))
	}
	rec = se.get(rec.Header().Get("Location"), sess)
	checkGolden(t, "apps_removed", rec.Body.Bytes())

	bobSess, _ := se.sessionWith(se.bob, data.PrefixSession+strings.Repeat("B", 43), fixedCSRF)
	se.connectNone(se.bob)
	rec = se.get(appsPath, bobSess)
	checkGolden(t, "apps_empty", rec.Body.Bytes())
	if !strings.Contains(rec.Body.String(), `<p class="empty">`) || strings.Contains(rec.Body.String(), "<ul class=\"app-list\">") {
		t.Error("the empty state is not a sentence")
	}
}

// connectNone removes every app of u (the empty state).
func (se *settingsEnv) connectNone(u data.User) {
	se.t.Helper()
	apps, err := se.adm.ListUserApps(context.Background(), userRef(u))
	if err != nil {
		se.t.Fatal(err)
	}
	for _, a := range apps {
		if _, err := se.adm.RevokeUserApp(context.Background(), userRef(u), a.ClientID); err != nil {
			se.t.Fatal(err)
		}
	}
}

// TestAppsList: what each entry says.
func TestAppsList(t *testing.T) {
	se := newSettingsEnv(t)
	se.appsFixture()
	sess, _ := se.session(se.alice)
	body := se.get(appsPath, sess).Body.String()
	for _, want := range []string{
		"Acme Calendar Sync", "Developed by <span class=\"mono\">dev@acme.example</span>",
		"List your bookings", "View your profile.", // the consent page's words (data/scope)
		"Full access to your account", "Blocked by the platform",
		"1 Dec 2025, 12:00 UTC", // allowed 3 months ago
		"1 Mar 2026, 10:00 UTC", // last used 2 hours ago
		"Not since its access ended",
		`action="/settings/apps/c0ffee0000000001/revoke"`,
		`href="/settings/clients"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestAppsRemove: one click ends the app's access: families and consent
// are gone, the confirmation names the app; others' apps stay.
func TestAppsRemove(t *testing.T) {
	se := newSettingsEnv(t)
	sync, legacy, rejected, _ := se.appsFixture()
	ctx := context.Background()
	sess, csrf := se.session(se.alice)
	rec := se.post(appsPath+"/"+sync+"/revoke", url.Values{csrfField: {csrf}}, sess)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("remove = %d; want 303", rec.Code)
	}
	if _, err := se.store.GetFamily(ctx, "fam-sync"); !errors.Is(err, data.ErrNotFound) {
		t.Errorf("family after removal: %v; want ErrNotFound", err)
	}
	if _, err := se.store.GetGrant(ctx, se.alice.ID, sync); !errors.Is(err, data.ErrNotFound) {
		t.Errorf("consent after removal: %v; want ErrNotFound", err)
	}
	page := se.get(rec.Header().Get("Location"), sess).Body.String()
	if !strings.Contains(page, "Acme Calendar Sync</strong> no longer has access") {
		t.Errorf("no confirmation naming the app in %s", page)
	}
	if strings.Contains(page, `id="app-`+sync+`"`) {
		t.Error("the removed app is still listed")
	}
	// A confirmation link made elsewhere (wrong or missing check) shows nothing.
	for _, q := range []string{"?removed=" + legacy, "?removed=" + legacy + "&check=AAAAAAAAAAAAAAAAAAAAAA"} {
		if p := se.get(appsPath+q, sess).Body.String(); strings.Contains(p, "no longer has access") {
			t.Errorf("GET %s shows a confirmation", q)
		}
	}
	// Bob's app and the other apps are untouched.
	if _, err := se.store.GetFamily(ctx, "fam-bob"); err != nil {
		t.Errorf("bob's grant: %v", err)
	}
	if _, err := se.store.GetFamily(ctx, "fam-legacy"); err != nil {
		t.Errorf("alice's other grant: %v", err)
	}
	// A rejected app's consent (no live grant) is removed the same way.
	if rec := se.post(appsPath+"/"+rejected+"/revoke", url.Values{csrfField: {csrf}}, sess); rec.Code != http.StatusSeeOther {
		t.Errorf("removing the rejected app = %d; want 303", rec.Code)
	}
	apps, _ := se.adm.ListUserApps(ctx, userRef(se.alice))
	if len(apps) != 1 || apps[0].ClientID != legacy {
		t.Errorf("apps left = %+v; want the legacy one", apps)
	}
}

// TestAppsForeignIs404: an app the user has not allowed (someone else's,
// pending, unknown, already removed) gets the settings pages' 404 page,
// and nothing is removed.
func TestAppsForeignIs404(t *testing.T) {
	se := newSettingsEnv(t)
	sync, _, _, bobs := se.appsFixture()
	sess, csrf := se.session(se.alice)
	want := se.get(clientsPath+"/does-not-exist", sess)
	if want.Code != http.StatusNotFound {
		t.Fatalf("the settings' 404 page = %d", want.Code)
	}
	if rec := se.post(appsPath+"/"+sync+"/revoke", url.Values{csrfField: {csrf}}, sess); rec.Code != http.StatusSeeOther {
		t.Fatalf("remove = %d", rec.Code)
	}
	for _, id := range []string{bobs, "c0ffee0000000005", "does-not-exist", sync, "a%2Fb"} {
		rec := se.post(appsPath+"/"+id+"/revoke", url.Values{csrfField: {csrf}}, sess)
		if rec.Code != http.StatusNotFound || rec.Body.String() != want.Body.String() {
			t.Errorf("remove %s = %d; want the same 404 page as the developers' settings", id, rec.Code)
		}
		checkPageHeaders(t, rec)
	}
	if _, err := se.store.GetFamily(context.Background(), "fam-bob"); err != nil {
		t.Errorf("bob's grant after alice's attempt: %v", err)
	}
}

// TestAppsCSRF: a missing, wrong or other session's token, or a
// cross-origin POST, removes nothing (403).
func TestAppsCSRF(t *testing.T) {
	se := newSettingsEnv(t)
	sync, _, _, _ := se.appsFixture()
	sess, csrf := se.session(se.alice)
	_, other := se.session(se.alice)
	path := appsPath + "/" + sync + "/revoke"
	for _, bad := range []string{"", "wrong", other, csrf + "x"} {
		form := url.Values{csrfField: {bad}}
		if bad == "" {
			form = url.Values{}
		}
		if rec := se.post(path, form, sess); rec.Code != http.StatusForbidden {
			t.Errorf("POST with csrf %q = %d; want 403", bad, rec.Code)
		}
	}
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(url.Values{csrfField: {csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	req.AddCookie(sess)
	if rec := consenttest.Serve(se.e, req); rec.Code != http.StatusForbidden {
		t.Errorf("cross-origin POST = %d; want 403", rec.Code)
	}
	if _, err := se.store.GetFamily(context.Background(), "fam-sync"); err != nil {
		t.Errorf("the grant after refused POSTs: %v", err)
	}
}

// TestAppsOddClientID: a legacy client ID with characters that need
// escaping in a path is listed and removed.
func TestAppsOddClientID(t *testing.T) {
	se := newSettingsEnv(t)
	now := se.clock()
	id := "odd id/with%chars"
	if err := se.store.CreateClient(context.Background(), data.Client{ID: id, Name: "Odd <b>App</b>", UnclaimedOwner: "x@example.com", Type: data.Confidential,
		RedirectURIs: []string{"https://odd.example/cb"}, Legacy: true, Status: data.StatusApproved,
		Secrets: []data.ClientSecret{{ID: "cs_9", Hash: data.Hash("z"), CreatedAt: now}}, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	se.connect(se.alice, id, "fam-odd", nil, true, now, now)
	sess, csrf := se.session(se.alice)
	body := se.get(appsPath, sess).Body.String()
	if strings.Contains(body, "<b>App</b>") {
		t.Error("the app's name is not escaped")
	}
	action := appsPath + "/" + url.PathEscape(id) + "/revoke"
	if !strings.Contains(body, `action="`+strings.ReplaceAll(action, "%", "%")+`"`) {
		t.Errorf("the page lacks the form action %q", action)
	}
	if rec := se.post(action, url.Values{csrfField: {csrf}}, sess); rec.Code != http.StatusSeeOther {
		t.Fatalf("remove %q = %d %s", id, rec.Code, rec.Body)
	}
	if _, err := se.store.GetFamily(context.Background(), "fam-odd"); !errors.Is(err, data.ErrNotFound) {
		t.Errorf("family after removal: %v", err)
	}
}
