package settings

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"oauthd/consent"
	"oauthd/consent/consenttest"
	"oauthd/data"
	"oauthd/issuer/admin"
)

// create registers a client for owner through admin (as the form does).
func (se *settingsEnv) create(owner data.User, name string, public bool) admin.CreatedClient {
	se.t.Helper()
	c, err := se.adm.CreateClient(context.Background(), admin.NewClient{Owner: owner.Email, Name: name,
		RedirectURIs: []string{"https://app.example.org/cb"}, Scopes: []string{"PROFILE_READ"}, Public: public})
	if err != nil {
		se.t.Fatal(err)
	}
	return c
}

func (se *settingsEnv) client(id string) data.Client {
	se.t.Helper()
	c, err := se.store.GetClient(context.Background(), id)
	if err != nil {
		se.t.Fatal(err)
	}
	return c
}

// legacy stores an approved legacy client of owner with usage counts.
func (se *settingsEnv) legacy(owner data.User, id string, withScope, withoutScope int64) {
	se.t.Helper()
	now := se.clock()
	c := data.Client{ID: id, Name: "Old Integration", OwnerID: owner.ID, Type: data.Confidential,
		RedirectURIs: []string{"https://old.example.org/cb"}, Legacy: true, Status: data.StatusApproved,
		Secrets:   []data.ClientSecret{{ID: "cs_legacy01", Hash: data.Hash("oauthd_cs_legacy"), CreatedAt: now}},
		Usage:     []data.UsageDay{{Day: now.AddDate(0, 0, -3).Format("2006-01-02"), WithScope: withScope, WithoutScope: withoutScope}},
		CreatedAt: now, UpdatedAt: now}
	if err := se.store.CreateClient(context.Background(), c); err != nil {
		se.t.Fatal(err)
	}
}

func TestSettingsLoginRequired(t *testing.T) {
	se := newSettingsEnv(t)
	c := se.create(se.alice, "Mine", false)
	for _, tc := range []struct{ method, path, back string }{
		{http.MethodGet, clientsPath, clientsPath},
		{http.MethodGet, newClientPath, newClientPath},
		{http.MethodPost, newClientPath, newClientPath},
		{http.MethodGet, clientsPath + "/" + c.ClientID, clientsPath + "/" + c.ClientID},
		{http.MethodPost, clientsPath + "/" + c.ClientID + "/secrets", clientsPath + "/" + c.ClientID},
	} {
		var rec *httptest.ResponseRecorder
		if tc.method == http.MethodGet {
			rec = se.get(tc.path)
		} else {
			rec = se.post(tc.path, url.Values{})
		}
		want := loginPath + "?return_to=" + url.QueryEscape(tc.back)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != want {
			t.Errorf("%s %s without session = %d %q; want 303 %q", tc.method, tc.path, rec.Code, rec.Header().Get("Location"), want)
		}
	}
	// The login form carries the settings path back, and logging in returns there.
	ck, tok := consenttest.LoginForm(t, se.e)
	rec := se.post(loginPath, url.Values{"login": {"alice"}, "password": {alicePassword}, csrfField: {tok}, "return_to": {clientsPath}}, ck)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != clientsPath {
		t.Errorf("login with return_to %s = %d %q; want 303 there", clientsPath, rec.Code, rec.Header().Get("Location"))
	}
}

func TestSettingsListShowsOwnClientsOnly(t *testing.T) {
	se := newSettingsEnv(t)
	a := se.create(se.alice, "Alice App", false)
	b := se.create(se.bob, "Bob App", false)
	if _, err := se.adm.RejectClient(context.Background(), a.ClientID, "Needs a privacy policy <url>"); err != nil {
		t.Fatal(err)
	}
	se.legacy(se.alice, "legacy-alice", 1, 0)
	sess, _ := se.session(se.alice)
	rec := se.get(clientsPath, sess)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	checkPageHeaders(t, rec)
	body := rec.Body.String()
	for _, want := range []string{"Alice App", a.ClientID, "Rejected", "Needs a privacy policy &lt;url&gt;",
		"legacy-alice", "Legacy", "Confidential", `href="/settings/clients/new"`, "Register a new client"} {
		if !strings.Contains(body, want) {
			t.Errorf("list lacks %q", want)
		}
	}
	for _, bad := range []string{"Bob App", b.ClientID} {
		if strings.Contains(body, bad) {
			t.Errorf("alice's list shows bob's client (%q)", bad)
		}
	}
	sess, _ = se.session(se.bob)
	body = se.get(clientsPath, sess).Body.String()
	if !strings.Contains(body, "Bob App") || !strings.Contains(body, "Pending review") || strings.Contains(body, "Alice App") {
		t.Errorf("bob's list wrong:\n%s", body)
	}
}

var secretRE = regexp.MustCompile(`<code class="secret">(oauthd_cs_[A-Za-z0-9_-]+)</code>`)

func TestSettingsCreateClient(t *testing.T) {
	se := newSettingsEnv(t)
	sess, csrf := se.session(se.alice)
	page := se.get(newClientPath, sess)
	if page.Code != http.StatusOK {
		t.Fatalf("form status %d", page.Code)
	}
	checkPageHeaders(t, page)
	for _, want := range []string{"User scopes", "Team scopes", "Organization scopes", `value="PROFILE_READ"`, "View your profile."} {
		if !strings.Contains(page.Body.String(), want) {
			t.Errorf("form lacks %q", want)
		}
	}
	rec := se.post(newClientPath, url.Values{csrfField: {csrf}, "name": {"Acme Sync"}, "client_type": {"confidential"},
		"redirect_uris": {"https://acme.example/cb\r\n\r\nhttp://localhost:8080/cb\n"},
		"scope":         {"PROFILE_READ", "TEAM_BOOKING_READ"}}, sess)
	if rec.Code != http.StatusOK {
		t.Fatalf("create = %d\n%s", rec.Code, rec.Body)
	}
	checkPageHeaders(t, rec)
	body := rec.Body.String()
	m := secretRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no secret shown:\n%s", body)
	}
	for _, want := range []string{"Copy it now; it cannot be shown again.", "pending review by a platform administrator"} {
		if !strings.Contains(body, want) {
			t.Errorf("created page lacks %q", want)
		}
	}
	all, _ := se.store.ListClients(context.Background(), "")
	if len(all) != 1 {
		t.Fatalf("%d clients stored; want 1", len(all))
	}
	c := all[0]
	if c.OwnerID != se.alice.ID || c.Status != data.StatusPending || c.Name != "Acme Sync" ||
		strings.Join(c.RedirectURIs, " ") != "https://acme.example/cb http://localhost:8080/cb" ||
		strings.Join(c.Scopes, " ") != "PROFILE_READ TEAM_BOOKING_READ" {
		t.Errorf("stored client = %+v", c)
	}
	if len(c.Secrets) != 1 || !data.Equal(c.Secrets[0].Hash, data.Hash(m[1])) {
		t.Errorf("stored secret is not the hash of the shown one: %+v", c.Secrets)
	}
	if !strings.Contains(body, c.ID) {
		t.Errorf("created page lacks the client ID %s", c.ID)
	}
	// Shown once: the detail page never shows it.
	detail := se.get(clientsPath+"/"+c.ID, sess).Body.String()
	if strings.Contains(detail, m[1]) || strings.Contains(detail, "oauthd_cs_") {
		t.Error("detail page shows the secret")
	}
	if !strings.Contains(detail, "Pending review") {
		t.Error("detail page lacks the pending status")
	}

	// Public: no secret.
	rec = se.post(newClientPath, url.Values{csrfField: {csrf}, "name": {"SPA"}, "client_type": {"public"},
		"redirect_uris": {"https://spa.example/cb"}, "scope": {"BOOKING_READ"}}, sess)
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), "oauthd_cs_") || !strings.Contains(rec.Body.String(), "code_challenge") {
		t.Errorf("public create = %d, secret or PKCE note wrong", rec.Code)
	}
}

func TestSettingsCreateValidation(t *testing.T) {
	se := newSettingsEnv(t)
	sess, csrf := se.session(se.alice)
	many := strings.Repeat("https://a.example/x\n", 1) + func() string {
		var b strings.Builder
		for i := range 11 {
			b.WriteString("https://a.example/" + string(rune('a'+i)) + "\n")
		}
		return b.String()
	}()
	tests := []struct {
		name   string
		form   url.Values
		status int
		want   string
	}{
		{"no scope", url.Values{"name": {"X <keep>"}, "client_type": {"confidential"}, "redirect_uris": {"https://a.example/cb"}}, 400, "Choose at least one scope."},
		{"http redirect", url.Values{"name": {"X <keep>"}, "client_type": {"confidential"}, "redirect_uris": {"http://a.example/cb"}, "scope": {"PROFILE_READ"}}, 400, "uses http; use https"},
		{"fragment", url.Values{"name": {"X <keep>"}, "client_type": {"public"}, "redirect_uris": {"https://a.example/cb#f"}, "scope": {"PROFILE_READ"}}, 400, "has a fragment"},
		{"no redirect", url.Values{"name": {"X <keep>"}, "client_type": {"confidential"}, "redirect_uris": {"  \n "}, "scope": {"PROFILE_READ"}}, 400, "at least one redirect URI is required"},
		{"eleven redirects", url.Values{"name": {"X <keep>"}, "client_type": {"confidential"}, "redirect_uris": {many}, "scope": {"PROFILE_READ"}}, 400, "a client has at most 10"},
		{"unknown scope", url.Values{"name": {"X <keep>"}, "client_type": {"confidential"}, "redirect_uris": {"https://a.example/cb"}, "scope": {"PROFILE_READ", "ROOT"}}, 400, "Unknown scope ROOT"},
		{"no name", url.Values{"name": {" "}, "client_type": {"confidential"}, "redirect_uris": {"https://a.example/cb"}, "scope": {"PROFILE_READ"}}, 400, "Name: must be 1 to 200 bytes"},
		{"bad type", url.Values{"name": {"X <keep>"}, "client_type": {"admin"}, "redirect_uris": {"https://a.example/cb"}, "scope": {"PROFILE_READ"}}, 400, "Choose the client type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.form.Set(csrfField, csrf)
			rec := se.post(newClientPath, tc.form, sess)
			body := html.UnescapeString(rec.Body.String())
			if rec.Code != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("= %d; want %d with %q\n%s", rec.Code, tc.status, tc.want, body)
			}
			if strings.Contains(body, "--scope") || strings.Contains(body, "`oauthd") {
				t.Errorf("page shows a command-line hint:\n%s", body)
			}
			// Input kept (escaped).
			raw := rec.Body.String()
			if n := tc.form.Get("name"); strings.TrimSpace(n) != "" && !strings.Contains(raw, `value="X &lt;keep&gt;"`) {
				t.Errorf("name not kept")
			}
			if u := strings.TrimSpace(tc.form.Get("redirect_uris")); u != "" && !strings.Contains(body, strings.Split(u, "\n")[0]) {
				t.Errorf("redirect URIs not kept")
			}
			if tc.form.Has("scope") && !strings.Contains(raw, `value="PROFILE_READ" checked`) {
				t.Errorf("checked scope not kept")
			}
			if all, _ := se.store.ListClients(context.Background(), ""); len(all) != 0 {
				t.Errorf("a client was stored")
			}
		})
	}
}

// foreignRoutes are every route on client id, with the form each needs.
func foreignRoutes(id, csrf string) []struct {
	method, path string
	form         url.Values
} {
	return []struct {
		method, path string
		form         url.Values
	}{
		{http.MethodGet, clientsPath + "/" + id, nil},
		{http.MethodPost, clientsPath + "/" + id + "/redirect-uris", url.Values{csrfField: {csrf}, "redirect_uris": {"https://evil.example/cb"}}},
		{http.MethodPost, clientsPath + "/" + id + "/scopes", url.Values{csrfField: {csrf}, "scope": {"ORG_MEMBERSHIP_WRITE"}, "confirm": {"yes"}}},
		{http.MethodPost, clientsPath + "/" + id + "/secrets", url.Values{csrfField: {csrf}}},
		{http.MethodPost, clientsPath + "/" + id + "/secrets/revoke", url.Values{csrfField: {csrf}, "secret_id": {"x"}}},
		{http.MethodPost, clientsPath + "/" + id + "/protections", url.Values{csrfField: {csrf}}},
	}
}

func (se *settingsEnv) do(method, path string, form url.Values, ck *http.Cookie) *httptest.ResponseRecorder {
	if method == http.MethodGet {
		return se.get(path, ck)
	}
	return se.post(path, form, ck)
}

func TestSettingsOtherUsersClientIs404(t *testing.T) {
	se := newSettingsEnv(t)
	b := se.create(se.bob, "Bob Secret Project", false)
	se.legacy(se.bob, "bob-legacy", 0, 5)
	before := se.client(b.ClientID)
	sess, csrf := se.session(se.alice)
	for _, id := range []string{b.ClientID, "bob-legacy", "does-not-exist"} {
		for _, r := range foreignRoutes(id, csrf) {
			rec := se.do(r.method, r.path, r.form, sess)
			body := rec.Body.String()
			if rec.Code != http.StatusNotFound || !strings.Contains(body, "Client not found") {
				t.Errorf("%s %s as alice = %d; want 404", r.method, r.path, rec.Code)
			}
			if strings.Contains(body, "Bob Secret Project") || strings.Contains(body, "bob@example.com") {
				t.Errorf("%s %s reveals bob's client", r.method, r.path)
			}
			checkPageHeaders(t, rec)
		}
	}
	after := se.client(b.ClientID)
	if len(after.Secrets) != len(before.Secrets) || after.RedirectURIs[0] != before.RedirectURIs[0] || after.Scopes[0] != before.Scopes[0] {
		t.Errorf("bob's client changed: %+v", after)
	}
	if !se.client("bob-legacy").Legacy {
		t.Error("bob's legacy client was migrated")
	}
}

func TestSettingsCSRF(t *testing.T) {
	se := newSettingsEnv(t)
	a := se.create(se.alice, "Alice App", false)
	before := se.client(a.ClientID)
	sess, csrf := se.session(se.alice)
	_, otherCSRF := se.session(se.alice) // another session's token
	for _, bad := range []string{"", "wrong", otherCSRF, csrf + "x"} {
		for _, r := range foreignRoutes(a.ClientID, bad) {
			if r.method == http.MethodGet {
				continue
			}
			if bad == "" {
				r.form.Del(csrfField)
			}
			if rec := se.post(r.path, r.form, sess); rec.Code != http.StatusForbidden {
				t.Errorf("POST %s with csrf %q = %d; want 403", r.path, bad, rec.Code)
			}
		}
		rec := se.post(newClientPath, url.Values{csrfField: {bad}, "name": {"N"}, "client_type": {"public"},
			"redirect_uris": {"https://a.example/cb"}, "scope": {"PROFILE_READ"}}, sess)
		if rec.Code != http.StatusForbidden {
			t.Errorf("POST %s with csrf %q = %d; want 403", newClientPath, bad, rec.Code)
		}
	}
	// Right token, foreign Origin.
	req := httptest.NewRequest(http.MethodPost, clientsPath+"/"+a.ClientID+"/secrets", strings.NewReader(url.Values{csrfField: {csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	req.AddCookie(sess)
	if rec := consenttest.Serve(se.e, req); rec.Code != http.StatusForbidden {
		t.Errorf("cross-origin POST = %d; want 403", rec.Code)
	}
	after := se.client(a.ClientID)
	if len(after.Secrets) != 1 || after.Secrets[0].ID != before.Secrets[0].ID || after.RedirectURIs[0] != before.RedirectURIs[0] ||
		strings.Join(after.Scopes, " ") != strings.Join(before.Scopes, " ") {
		t.Errorf("client changed despite bad CSRF: %+v", after)
	}
	if all, _ := se.store.ListClients(context.Background(), ""); len(all) != 1 {
		t.Errorf("%d clients; want 1", len(all))
	}
}

func TestSettingsSecrets(t *testing.T) {
	se := newSettingsEnv(t)
	a := se.create(se.alice, "Alice App", false)
	sess, csrf := se.session(se.alice)
	path := clientsPath + "/" + a.ClientID

	// One secret: generate enabled; its Revoke disabled, the reason
	// beside it; revoking it anyway (a crafted POST) is refused.
	page := se.get(path, sess).Body.String()
	if strings.Contains(page, "Generate new secret</button>") && strings.Contains(page, `aria-describedby="generate-why"`) ||
		!strings.Contains(page, `<span id="revoke-why" class="hint">The only secret: generate a new one first.</span> <button type="submit" class="btn btn-danger btn-small" disabled aria-describedby="revoke-why">Revoke</button>`) ||
		strings.Count(page, " disabled") != 1 || !strings.Contains(page, a.SecretID) || !strings.Contains(page, "Revoke the old secret. This takes effect immediately") {
		t.Errorf("detail page with one secret wrong:\n%s", page)
	}
	rec := se.post(path+"/secrets/revoke", url.Values{csrfField: {csrf}, "secret_id": {a.SecretID}}, sess)
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "only secret and a confidential client needs one") {
		t.Errorf("revoke last = %d\n%s", rec.Code, rec.Body)
	}
	if len(se.client(a.ClientID).Secrets) != 1 {
		t.Fatal("last secret revoked")
	}

	// Generate: shown once on the response, stored as hash.
	rec = se.post(path+"/secrets", url.Values{csrfField: {csrf}}, sess)
	m := secretRE.FindStringSubmatch(rec.Body.String())
	if rec.Code != http.StatusOK || m == nil || !strings.Contains(rec.Body.String(), "Copy it now; it cannot be shown again.") {
		t.Fatalf("generate = %d\n%s", rec.Code, rec.Body)
	}
	checkPageHeaders(t, rec)
	c := se.client(a.ClientID)
	if len(c.Secrets) != 2 || !data.Equal(c.Secrets[1].Hash, data.Hash(m[1])) {
		t.Fatalf("secrets after generate: %+v", c.Secrets)
	}
	// Two active: button disabled with the explanation; a third is refused.
	page = se.get(path, sess).Body.String()
	if !strings.Contains(page, `disabled aria-describedby="generate-why"`) || !strings.Contains(page, "revoke one first") {
		t.Errorf("generate not disabled with 2 secrets")
	}
	rec = se.post(path+"/secrets", url.Values{csrfField: {csrf}}, sess)
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "already has 2 active secrets: revoke one first") ||
		strings.Contains(rec.Body.String(), "oauthd_cs_") {
		t.Errorf("third secret = %d\n%s", rec.Code, rec.Body)
	}
	if len(se.client(a.ClientID).Secrets) != 2 {
		t.Fatal("a third secret was stored")
	}

	// Revoke the old one: 303 with a fixed notice.
	rec = se.post(path+"/secrets/revoke", url.Values{csrfField: {csrf}, "secret_id": {a.SecretID}}, sess)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != path+"?done=secret_revoked" {
		t.Fatalf("revoke = %d %q", rec.Code, rec.Header().Get("Location"))
	}
	if c := se.client(a.ClientID); len(c.Secrets) != 1 || c.Secrets[0].ID == a.SecretID {
		t.Errorf("secrets after revoke: %+v", c.Secrets)
	}
	page = se.get(rec.Header().Get("Location"), sess).Body.String()
	if !strings.Contains(page, "The secret was revoked.") {
		t.Error("no revoke notice")
	}
	// Unknown secret, and flash codes are fixed text only.
	rec = se.post(path+"/secrets/revoke", url.Values{csrfField: {csrf}, "secret_id": {"cs_nope"}}, sess)
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "That secret is not active") {
		t.Errorf("revoke unknown = %d", rec.Code)
	}
	page = se.get(path+"?done=%3Cscript%3Ealert(1)%3C/script%3E", sess).Body.String()
	if strings.Contains(page, "alert(1)") || strings.Contains(page, "alert-ok") {
		t.Error("a free-text done= is rendered")
	}
}

func TestSettingsPublicClientHasNoSecrets(t *testing.T) {
	se := newSettingsEnv(t)
	a := se.create(se.alice, "SPA", true)
	sess, csrf := se.session(se.alice)
	page := se.get(clientsPath+"/"+a.ClientID, sess).Body.String()
	if strings.Contains(page, "Generate new secret") || !strings.Contains(page, "has no secret") {
		t.Error("public client page offers secrets")
	}
	rec := se.post(clientsPath+"/"+a.ClientID+"/secrets", url.Values{csrfField: {csrf}}, sess)
	if rec.Code != http.StatusBadRequest || len(se.client(a.ClientID).Secrets) != 0 {
		t.Errorf("generate on public = %d", rec.Code)
	}
}

func TestSettingsRedirectURIsAndScopes(t *testing.T) {
	se := newSettingsEnv(t)
	a := se.create(se.alice, "Alice App", false)
	sess, csrf := se.session(se.alice)
	path := clientsPath + "/" + a.ClientID
	rec := se.post(path+"/redirect-uris", url.Values{csrfField: {csrf}, "redirect_uris": {"https://ok.example/cb\nhttp://evil.example/<cb>"}}, sess)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "uses http; use https") {
		t.Errorf("bad redirect = %d\n%s", rec.Code, rec.Body)
	}
	if !strings.Contains(rec.Body.String(), "http://evil.example/&lt;cb&gt;</textarea>") {
		t.Error("input not kept (escaped) in the textarea")
	}
	if se.client(a.ClientID).RedirectURIs[0] != "https://app.example.org/cb" {
		t.Error("redirect URIs changed")
	}
	rec = se.post(path+"/redirect-uris", url.Values{csrfField: {csrf}, "redirect_uris": {"https://ok.example/cb\nhttps://ok.example/cb2"}}, sess)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != path+"?done=redirect_uris_saved" {
		t.Errorf("save redirects = %d", rec.Code)
	}
	if got := strings.Join(se.client(a.ClientID).RedirectURIs, " "); got != "https://ok.example/cb https://ok.example/cb2" {
		t.Errorf("redirect URIs = %s", got)
	}
	rec = se.post(path+"/scopes", url.Values{csrfField: {csrf}}, sess)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "Choose at least one scope.") {
		t.Errorf("no scopes = %d", rec.Code)
	}
	rec = se.post(path+"/scopes", url.Values{csrfField: {csrf}, "scope": {"BOOKING_READ", "ORG_PROFILE_READ"}}, sess)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != path+"?done=scopes_saved" {
		t.Errorf("save scopes = %d", rec.Code)
	}
	if got := strings.Join(se.client(a.ClientID).Scopes, " "); got != "BOOKING_READ ORG_PROFILE_READ" {
		t.Errorf("scopes = %s", got)
	}
}

func TestSettingsLegacyMigration(t *testing.T) {
	se := newSettingsEnv(t)
	se.legacy(se.alice, "legacy-risky", 10, 4)
	se.legacy(se.alice, "legacy-safe", 12, 0)
	sess, csrf := se.session(se.alice)

	page := se.get(clientsPath+"/legacy-risky", sess).Body.String()
	for _, want := range []string{"Migrate to scopes", "Authorization requests in the last 30 days", "<td>10</td>", `<td class="bad">4</td>`,
		"Users opening the old URL will fail to authorize after migration", `name="confirm"`,
		"Save scopes only once your authorization URL carries a <code>scope</code> parameter."} {
		if !strings.Contains(page, want) {
			t.Errorf("risky migration panel lacks %q", want)
		}
	}
	path := clientsPath + "/legacy-risky/scopes"
	rec := se.post(path, url.Values{csrfField: {csrf}, "scope": {"PROFILE_READ"}}, sess)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "Confirm that your authorization URL now carries scope") ||
		!strings.Contains(rec.Body.String(), `value="PROFILE_READ" checked`) {
		t.Errorf("migration without confirmation = %d\n%s", rec.Code, rec.Body)
	}
	if c := se.client("legacy-risky"); !c.Legacy || len(c.Scopes) != 0 {
		t.Fatal("migrated without confirmation")
	}
	rec = se.post(path, url.Values{csrfField: {csrf}, "scope": {"PROFILE_READ"}, "confirm": {"yes"}}, sess)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != clientsPath+"/legacy-risky?done=migrated" {
		t.Fatalf("migration with confirmation = %d %q", rec.Code, rec.Header().Get("Location"))
	}
	if c := se.client("legacy-risky"); c.Legacy || strings.Join(c.Scopes, " ") != "PROFILE_READ" {
		t.Errorf("after migration: %+v", c)
	}
	page = se.get(rec.Header().Get("Location"), sess).Body.String()
	if strings.Contains(page, "Migrate to scopes") || !strings.Contains(page, "The client is migrated") {
		t.Error("migrated client still shows the migration panel or no notice")
	}

	// No request without scope: no confirmation needed.
	page = se.get(clientsPath+"/legacy-safe", sess).Body.String()
	if strings.Contains(page, `name="confirm"`) || !strings.Contains(page, "saving scopes will not break your users") {
		t.Error("safe migration panel wrong")
	}
	rec = se.post(clientsPath+"/legacy-safe/scopes", url.Values{csrfField: {csrf}, "scope": {"BOOKING_READ"}}, sess)
	if rec.Code != http.StatusSeeOther || se.client("legacy-safe").Legacy {
		t.Errorf("safe migration = %d", rec.Code)
	}
}

func TestSettingsEscapesHostileName(t *testing.T) {
	se := newSettingsEnv(t)
	const hostile = `<script>alert("x")</script><img src=x onerror=alert(1)>`
	sess, csrf := se.session(se.alice)
	rec := se.post(newClientPath, url.Values{csrfField: {csrf}, "name": {hostile}, "client_type": {"confidential"},
		"redirect_uris": {"https://a.example/cb"}, "scope": {"PROFILE_READ"}}, sess)
	all, _ := se.store.ListClients(context.Background(), "")
	if rec.Code != http.StatusOK || len(all) != 1 {
		t.Fatalf("create = %d", rec.Code)
	}
	if _, err := se.adm.RejectClient(context.Background(), all[0].ID, `<b onmouseover=x>no</b>`); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{rec.Body.String(), se.get(clientsPath, sess).Body.String(), se.get(clientsPath+"/"+all[0].ID, sess).Body.String()} {
		if strings.Contains(body, "<script>") || strings.Contains(body, "<img") || strings.Contains(body, "<b onmouseover") {
			t.Errorf("unescaped markup in page:\n%s", body)
		}
		if !strings.Contains(body, "&lt;script&gt;") {
			t.Errorf("escaped name missing")
		}
	}
}

// TestSettingsGolden pins the list and detail pages byte for byte (fixed
// IDs, times, session).
func TestSettingsGolden(t *testing.T) {
	se := newSettingsEnv(t)
	ctx := context.Background()
	now := se.clock()
	sess, _ := se.sessionWith(se.alice, fixedSession, fixedCSRF)
	used := now.Add(-2 * 3600e9)
	for _, c := range []data.Client{
		{ID: "c0ffee0000000001", Name: "Acme Calendar Sync", OwnerID: se.alice.ID, Type: data.Confidential,
			RedirectURIs: []string{"https://app.acme.example/callback", "http://localhost:8080/callback"},
			Scopes:       []string{"BOOKING_READ", "PROFILE_READ", "TEAM_BOOKING_READ"}, Status: data.StatusApproved,
			Secrets: []data.ClientSecret{
				{ID: "cs_000000001", Hash: data.Hash("a"), CreatedAt: now.AddDate(0, -2, 0), LastUsedAt: used},
				{ID: "cs_000000002", Hash: data.Hash("b"), CreatedAt: now.AddDate(0, 0, -1)},
			}},
		{ID: "c0ffee0000000002", Name: "Team Planner (mobile)", OwnerID: se.alice.ID, Type: data.Public,
			RedirectURIs: []string{"https://planner.example/cb"}, Scopes: []string{"SCHEDULE_READ"}, Status: data.StatusPending},
		{ID: "c0ffee0000000003", Name: "Booking Exporter", OwnerID: se.alice.ID, Type: data.Confidential,
			RedirectURIs: []string{"https://export.example/cb"}, Scopes: []string{"ORG_BOOKING_READ"}, Status: data.StatusRejected,
			RejectReason: "Organization-wide booking access needs a signed data processing agreement.",
			Secrets:      []data.ClientSecret{{ID: "cs_000000003", Hash: data.Hash("c"), CreatedAt: now}}},
		{ID: "legacy-importer", Name: "Old Importer", OwnerID: se.alice.ID, Type: data.Confidential,
			RedirectURIs: []string{"https://old.example/cb"}, Legacy: true, Status: data.StatusApproved,
			Secrets: []data.ClientSecret{{ID: "cs_000000004", Hash: data.Hash("d"), CreatedAt: now.AddDate(-1, 0, 0), LastUsedAt: used}},
			Usage:   []data.UsageDay{{Day: now.AddDate(0, 0, -2).Format("2006-01-02"), WithScope: 41, WithoutScope: 7}}},
		{ID: "c0ffee0000000004", Name: "Shift Planner", OwnerID: se.alice.ID, Type: data.Confidential,
			RedirectURIs: []string{"https://shifts.example/cb"}, Scopes: []string{"SCHEDULE_READ", "PROFILE_READ"}, Status: data.StatusApproved,
			Secrets: []data.ClientSecret{{ID: "cs_000000005", Hash: data.Hash("e"), CreatedAt: now}},
			Pending: &data.ClientChange{AddScopes: []string{"TEAM_SCHEDULE_READ"}, AddRedirectURIs: []string{"https://shifts.example/cb2"},
				ProposedBy: "user 1 (settings_page)", ProposedAt: now.Add(-30 * 60e9)}},
		{ID: "c0ffee0000000005", Name: "Room Finder", OwnerID: se.alice.ID, Type: data.Public,
			RedirectURIs: []string{"https://rooms.example/cb"}, Scopes: []string{"APPS_READ"}, Status: data.StatusApproved,
			RejectedChange: &data.ClientChange{AddScopes: []string{"ORG_MEMBERSHIP_WRITE"}, ProposedBy: "user 1 (settings_page)",
				ProposedAt: now.Add(-48 * 3600e9), RejectReason: "Room search does not need to edit memberships."}},
		{ID: "b0b0000000000001", Name: "Bob's", OwnerID: se.bob.ID, Type: data.Public,
			RedirectURIs: []string{"https://bob.example/cb"}, Scopes: []string{"PROFILE_READ"}, Status: data.StatusPending},
	} {
		c.CreatedAt, c.UpdatedAt = now, now
		if err := se.store.CreateClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []struct{ name, path string }{
		{"settings_list", clientsPath},
		{"settings_client", clientsPath + "/c0ffee0000000001?done=secret_revoked"},
		{"settings_legacy", clientsPath + "/legacy-importer"},
		{"settings_pending", clientsPath + "/c0ffee0000000004?done=change_pending"},
		{"settings_rejected_change", clientsPath + "/c0ffee0000000005"},
		{"settings_new", newClientPath},
	} {
		t.Run(p.name, func(t *testing.T) {
			rec := se.get(p.path, sess)
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d", rec.Code)
			}
			checkGolden(t, p.name, rec.Body.Bytes())
		})
	}
}

// TestSettingsWideningWaits: on an approved client the owner's additions
// wait for review (the approved settings stay), removals apply at once,
// and replacing every approved redirect URI is refused with a sentence.
func TestSettingsWideningWaits(t *testing.T) {
	se := newSettingsEnv(t)
	a := se.create(se.alice, "Alice App", false)
	if _, err := se.adm.ApproveClient(context.Background(), a.ClientID); err != nil {
		t.Fatal(err)
	}
	sess, csrf := se.session(se.alice)
	path := clientsPath + "/" + a.ClientID
	rec := se.post(path+"/redirect-uris", url.Values{csrfField: {csrf}, "redirect_uris": {"https://app.example.org/cb\nhttps://new.example.org/cb"}}, sess)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != path+"?done=change_pending" {
		t.Fatalf("widening save = %d %q", rec.Code, rec.Header().Get("Location"))
	}
	c := se.client(a.ClientID)
	if strings.Join(c.RedirectURIs, " ") != "https://app.example.org/cb" || c.Pending == nil || c.Pending.AddRedirectURIs[0] != "https://new.example.org/cb" {
		t.Fatalf("stored = %+v, pending %+v", c, c.Pending)
	}
	page := se.get(rec.Header().Get("Location"), sess).Body.String()
	for _, want := range []string{"Saved for review:", `id="pending-change"`, "Your change is not in force yet", `<td class="added"><code>https://new.example.org/cb</code>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	rec = se.post(path+"/redirect-uris", url.Values{csrfField: {csrf}, "redirect_uris": {"https://moved.example.org/cb"}}, sess)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "Keep at least one of the approved redirect URIs") {
		t.Errorf("replacing every approved URI = %d\n%s", rec.Code, rec.Body)
	}
	rec = se.post(path+"/scopes", url.Values{csrfField: {csrf}, "scope": {"PROFILE_READ", "BOOKING_READ"}}, sess)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("scope save = %d", rec.Code)
	}
	if c := se.client(a.ClientID); strings.Join(c.Scopes, " ") != "PROFILE_READ" || strings.Join(c.Pending.AddScopes, " ") != "BOOKING_READ" {
		t.Errorf("scopes %v, pending %+v; want PROFILE_READ approved and BOOKING_READ waiting", c.Scopes, c.Pending)
	}
	rec = se.post(path+"/scopes", url.Values{csrfField: {csrf}, "scope": {"NOPE"}}, sess)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "Unknown scope NOPE") {
		t.Errorf("forged unknown scope = %d\n%s", rec.Code, rec.Body)
	}
}

// TestSettingsProtections: the Protections form turns DPoP and PAR on at
// once; turning one off waits for review and shows in the pending panel.
func TestSettingsProtections(t *testing.T) {
	se := newSettingsEnv(t)
	a := se.create(se.alice, "Alice App", true)
	if _, err := se.adm.ApproveClient(context.Background(), a.ClientID); err != nil {
		t.Fatal(err)
	}
	sess, csrf := se.session(se.alice)
	path := clientsPath + "/" + a.ClientID
	rec := se.post(path+"/protections", url.Values{csrfField: {csrf}, "dpop_bound_access_tokens": {"on"}, "require_pushed_authorization_requests": {"on"}}, sess)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != path+"?done=protections_saved" {
		t.Fatalf("turning on = %d %q", rec.Code, rec.Header().Get("Location"))
	}
	if c := se.client(a.ClientID); !c.DPoPBoundAccessTokens || !c.RequirePAR || c.Pending != nil {
		t.Fatalf("stored = %+v", c)
	}
	page := se.get(path, sess).Body.String()
	if !strings.Contains(page, `name="dpop_bound_access_tokens" checked`) || !strings.Contains(page, `name="require_pushed_authorization_requests" checked`) {
		t.Errorf("the page does not show both protections on")
	}
	// Unchecking DPoP: a widening change, not in force until approved.
	rec = se.post(path+"/protections", url.Values{csrfField: {csrf}, "require_pushed_authorization_requests": {"on"}}, sess)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != path+"?done=change_pending" {
		t.Fatalf("turning off = %d %q", rec.Code, rec.Header().Get("Location"))
	}
	c := se.client(a.ClientID)
	if !c.DPoPBoundAccessTokens || c.Pending == nil || !c.Pending.DropDPoPBound || c.Pending.DropRequirePAR {
		t.Fatalf("stored = %+v, pending %+v", c, c.Pending)
	}
	if page := se.get(path, sess).Body.String(); !strings.Contains(page, `<th scope="row">DPoP</th>`) {
		t.Errorf("the pending panel does not show the DPoP row")
	}
	if _, err := se.adm.ApproveClient(context.Background(), a.ClientID); err != nil {
		t.Fatal(err)
	}
	if c := se.client(a.ClientID); c.DPoPBoundAccessTokens || !c.RequirePAR {
		t.Fatalf("after approval = %+v", c)
	}
}

// TestNewNeedsSiteAndClients: without the login pages or the admin
// service the settings pages cannot work, and New says so.
func TestNewNeedsSiteAndClients(t *testing.T) {
	se := newSettingsEnv(t)
	site, err := consent.New(consent.Config{Store: se.store, Authorizer: noAuthorizer{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []Config{{}, {Site: site}, {Clients: se.adm}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) = nil error; want one", cfg)
		}
	}
	if _, err := New(Config{Site: site, Clients: se.adm}); err != nil {
		t.Errorf("New with both = %v", err)
	}
}

// TestSettingsEveryRouteGuarded walks every route the package mounts: a
// request without a session goes to the login page (which returns to the
// page), and a POST with a session but without its CSRF token is refused
// and changes nothing. A route mounted without its steps fails here.
func TestSettingsEveryRouteGuarded(t *testing.T) {
	se := newSettingsEnv(t)
	a := se.create(se.alice, "Mine", false)
	before := se.client(a.ClientID)
	sess, _ := se.session(se.alice)
	form := url.Values{"name": {"X"}, "client_type": {"public"}, "redirect_uris": {"https://x.example/cb"},
		"scope": {"ORG_MEMBERSHIP_WRITE"}, "confirm": {"yes"}, "secret_id": {a.SecretID},
		"post_logout_redirect_uris": {"https://x.example/bye"}, "grant_type": {"client_credentials"}}
	routes := 0
	for _, r := range se.e.Routes() {
		if !strings.HasPrefix(r.Path, "/settings/") {
			continue
		}
		routes++
		path := strings.ReplaceAll(r.Path, ":id", a.ClientID)
		rec := se.get(path)
		if r.Method == http.MethodPost {
			rec = se.post(path, form)
		}
		if loc := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || !strings.HasPrefix(loc, loginPath+"?return_to=") {
			t.Errorf("%s %s without session = %d %q; want 303 to the login page", r.Method, r.Path, rec.Code, loc)
		}
		if r.Method == http.MethodPost {
			if rec := se.post(path, form, sess); rec.Code != http.StatusForbidden {
				t.Errorf("POST %s without CSRF token = %d; want 403", r.Path, rec.Code)
			}
		}
	}
	if routes != 13 {
		t.Errorf("%d settings routes; want 13 (update this test with the new route)", routes)
	}
	after := se.client(a.ClientID)
	if len(after.Secrets) != 1 || after.Secrets[0].ID != before.Secrets[0].ID || after.Name != before.Name ||
		strings.Join(after.Scopes, " ") != strings.Join(before.Scopes, " ") || after.Pending != nil || len(after.PostLogoutRedirectURIs) != 0 {
		t.Errorf("client changed: %+v", after)
	}
	if all, _ := se.store.ListClients(context.Background(), ""); len(all) != 1 {
		t.Errorf("%d clients; want 1", len(all))
	}
}

// TestSettingsPostLogoutURIs: the owner's post-logout redirect URIs
// (OpenID Connect RP-Initiated Logout): checked like redirect URIs, input
// kept on error; on an approved client a new one waits for review, a
// removal applies at once.
func TestSettingsPostLogoutURIs(t *testing.T) {
	se := newSettingsEnv(t)
	a := se.create(se.alice, "Alice App", false)
	sess, csrf := se.session(se.alice)
	path := clientsPath + "/" + a.ClientID
	rec := se.post(path+"/post-logout-uris", url.Values{csrfField: {csrf}, "post_logout_redirect_uris": {"http://evil.example/<out>"}}, sess)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "http://evil.example/&lt;out&gt;</textarea>") {
		t.Fatalf("bad post-logout URI = %d\n%s", rec.Code, rec.Body)
	}
	if _, err := se.adm.ApproveClient(context.Background(), a.ClientID); err != nil {
		t.Fatal(err)
	}
	rec = se.post(path+"/post-logout-uris", url.Values{csrfField: {csrf}, "post_logout_redirect_uris": {"https://ok.example/out"}}, sess)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != path+"?done=change_pending" {
		t.Fatalf("add on an approved client = %d %q; want the change pending", rec.Code, rec.Header().Get("Location"))
	}
	c := se.client(a.ClientID)
	if len(c.PostLogoutRedirectURIs) != 0 || c.Pending == nil || len(c.Pending.AddPostLogoutRedirectURIs) != 1 {
		t.Fatalf("client %+v; want the URI pending, not in force", c)
	}
	page := se.get(path, sess)
	if !strings.Contains(page.Body.String(), "Post-logout redirect URIs") || !strings.Contains(page.Body.String(), "https://ok.example/out") {
		t.Fatal("the page does not show the pending post-logout URI")
	}
	if _, err := se.adm.ApproveClient(context.Background(), a.ClientID); err != nil {
		t.Fatal(err)
	}
	rec = se.post(path+"/post-logout-uris", url.Values{csrfField: {csrf}, "post_logout_redirect_uris": {""}}, sess)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != path+"?done=post_logout_saved" || len(se.client(a.ClientID).PostLogoutRedirectURIs) != 0 {
		t.Fatalf("remove = %d %q; want saved at once", rec.Code, rec.Header().Get("Location"))
	}
}

// TestSettingsCreateMachineClient: the form makes a backend that may use
// client_credentials only and authenticates with keys at a jwks_uri: no
// secret is shown, and the client page shows its grant types and keys.
func TestSettingsCreateMachineClient(t *testing.T) {
	se := newSettingsEnv(t)
	sess, csrf := se.session(se.alice)
	if page := se.get(newClientPath, sess).Body.String(); !strings.Contains(page, `name="grant_type" value="client_credentials"`) ||
		!strings.Contains(page, `name="jwks_uri"`) {
		t.Fatalf("form lacks the grant types or the keys URL")
	}
	rec := se.post(newClientPath, url.Values{csrfField: {csrf}, "name": {"Nightly sync"}, "client_type": {"confidential"},
		"grant_type": {"client_credentials"}, "jwks_uri": {"https://sync.example.com/jwks.json"},
		"scope": {"BOOKING_READ"}}, sess)
	if rec.Code != http.StatusOK || secretRE.MatchString(rec.Body.String()) {
		t.Fatalf("create = %d (a secret shown: %v)\n%s", rec.Code, secretRE.MatchString(rec.Body.String()), rec.Body)
	}
	cs, err := se.store.ListClients(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	var made *data.Client
	for i := range cs {
		if cs[i].Name == "Nightly sync" {
			made = &cs[i]
		}
	}
	if made == nil || !slices.Equal(made.GrantTypes, []string{data.GrantClientCredentials}) || made.JWKSURI != "https://sync.example.com/jwks.json" || len(made.Secrets) != 0 {
		t.Fatalf("client = %+v", made)
	}
	page := se.get("/settings/clients/"+made.ID, sess).Body.String()
	if !strings.Contains(page, "<code>client_credentials</code>") || !strings.Contains(page, "private_key_jwt") {
		t.Errorf("client page lacks grant types or keys:\n%s", page)
	}
	// A public client with client_credentials is refused with a sentence.
	rec = se.post(newClientPath, url.Values{csrfField: {csrf}, "name": {"Bad"}, "client_type": {"public"},
		"grant_type": {"client_credentials"}, "scope": {"BOOKING_READ"}}, sess)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "confidential clients only") {
		t.Errorf("public client_credentials = %d\n%s", rec.Code, rec.Body)
	}
}

// TestSettingsGrantTypes: on an approved client, a grant type added on
// the Grant types form waits for review (the pending panel shows it) and
// one removed applies at once; none at all is refused with a sentence.
func TestSettingsGrantTypes(t *testing.T) {
	se := newSettingsEnv(t)
	a := se.create(se.alice, "Alice App", false)
	if _, err := se.adm.ApproveClient(context.Background(), a.ClientID); err != nil {
		t.Fatal(err)
	}
	sess, csrf := se.session(se.alice)
	path := clientsPath + "/" + a.ClientID
	rec := se.post(path+"/grant-types", url.Values{csrfField: {csrf}, "grant_type": {"authorization_code", "client_credentials"}}, sess)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != path+"?done=change_pending" {
		t.Fatalf("save = %d %q", rec.Code, rec.Header().Get("Location"))
	}
	c := se.client(a.ClientID)
	if !slices.Equal(c.AllowedGrantTypes(), []string{data.GrantAuthorizationCode}) || c.Pending == nil ||
		!slices.Equal(c.Pending.AddGrantTypes, []string{data.GrantClientCredentials}) {
		t.Fatalf("stored = %v, pending %+v", c.AllowedGrantTypes(), c.Pending)
	}
	page := se.get(path, sess).Body.String()
	if !strings.Contains(page, "Waiting for review") || !strings.Contains(page, `value="client_credentials" checked`) {
		t.Errorf("the page does not show the pending grant type")
	}
	rec = se.post(path+"/grant-types", url.Values{csrfField: {csrf}}, sess)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "at least one grant type") {
		t.Errorf("no grant type = %d", rec.Code)
	}
}
