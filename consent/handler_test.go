package consent

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"oauthd/consent/consenttest"
	"oauthd/data"
	"oauthd/issuer"
	"oauthd/issuer/throttle"
)

func TestNewNeedsStoreAndAuthorizer(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New(Config{}) = nil error; want an error")
	}
	en := newEnv(t, "")
	if _, err := New(Config{Store: en.store, Authorizer: en.authz, AppURL: "ftp://x"}); err == nil {
		t.Error("New with AppURL ftp://x = nil error; want an error")
	}
}

func TestLoginSuccess(t *testing.T) {
	for _, tc := range []struct {
		name, appURL string
		secure       bool
	}{
		{"https", "https://app.example", true},
		{"http", "http://localhost:8080", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			en := newEnv(t, tc.appURL)
			ctx := context.Background()
			first := en.login("alice@example.com", alicePassword)
			checkSessionCookie(t, first, tc.secure)
			s, err := en.store.GetSession(ctx, data.Hash(first.Value))
			if err != nil {
				t.Fatalf("session of the cookie not stored: %v", err)
			}
			if s.UserID != en.alice.ID || s.CSRF == "" || !s.ExpiresAt.Equal(en.now.Add(12*time.Hour)) {
				t.Errorf("session = %+v; want user %d, a CSRF token, expiry +12h", s, en.alice.ID)
			}

			// Logging in again (by username, any case) gives a new ID and
			// deletes the previous session.
			second := en.login("ALICE", alicePassword, first)
			if second.Value == first.Value {
				t.Error("second login reused the session ID")
			}
			if _, err := en.store.GetSession(ctx, data.Hash(first.Value)); !errorsIsNotFound(err) {
				t.Errorf("previous session after new login: err = %v; want ErrNotFound", err)
			}
			if _, err := en.store.GetSession(ctx, data.Hash(second.Value)); err != nil {
				t.Errorf("new session: %v", err)
			}
		})
	}
}

func checkSessionCookie(t *testing.T, c *http.Cookie, secure bool) {
	t.Helper()
	if !strings.HasPrefix(c.Value, data.PrefixSession) || !wellFormed(c.Value, data.PrefixSession) {
		t.Errorf("session cookie value %q; want %s + 43 base64url chars", c.Value, data.PrefixSession)
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure != secure || c.MaxAge != 12*3600 {
		t.Errorf("session cookie = HttpOnly %v SameSite %v Path %q Secure %v MaxAge %d; want true Lax / %v 43200",
			c.HttpOnly, c.SameSite, c.Path, c.Secure, c.MaxAge, secure)
	}
}

func TestLoginRedirectsToReturnTo(t *testing.T) {
	en := newEnv(t, "")
	ck, tok := en.loginForm()
	rt := authorizePath + "?" + authorizeQuery().Encode()
	rec := en.post("/auth/login", url.Values{"login": {"alice"}, "password": {alicePassword}, csrfField: {tok}, "return_to": {rt}}, ck)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != rt {
		t.Fatalf("login = %d Location %q; want 303 %q", rec.Code, rec.Header().Get("Location"), rt)
	}
}

func TestLoginFailureIsGeneric(t *testing.T) {
	tests := []struct{ name, login, pw string }{
		{"wrong password", "alice@example.com", "nope"},
		{"unknown user", "mallory@example.com", "nope"},
		{"unknown user, real password", "mallory", alicePassword},
		{"empty password", "alice", ""},
		{"empty login", "", "x"},
		{"overlong login", strings.Repeat("a", 300), "x"},
		{"other user's password", "alice", bobPassword},
	}
	en := newEnv(t, "")
	ck, tok := en.loginForm()
	var bodies []string
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := en.post("/auth/login", url.Values{"login": {tc.login}, "password": {tc.pw}, csrfField: {tok}}, ck)
			if rec.Code != http.StatusUnauthorized {
				t.Fatalf("status %d; want 401", rec.Code)
			}
			if cookie(rec, sessionCookie) != nil {
				t.Error("failed login set a session cookie")
			}
			body := rec.Body.String()
			if !strings.Contains(body, msgWrongLogin) {
				t.Errorf("page lacks %q", msgWrongLogin)
			}
			if len(tc.pw) > 3 && strings.Contains(body, tc.pw) {
				t.Error("page echoes the password")
			}
			body = strings.ReplaceAll(body, `value="`+htmlEscape(strings.TrimSpace(tc.login))+`"`, "")
			body = strings.ReplaceAll(body, " autofocus", "")
			bodies = append(bodies, body)
		})
	}
	// Apart from the echoed login, the pages are identical: nothing tells
	// an unknown login from a wrong password.
	for i := 1; i < len(bodies); i++ {
		if bodies[i] != bodies[0] {
			t.Errorf("failure page %d (%s) differs from page 0", i, tests[i].name)
		}
	}
}

func htmlEscape(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")
	return r.Replace(s)
}

func TestLoginCSRF(t *testing.T) {
	en := newEnv(t, "https://app.example")
	ck, tok := en.loginForm()
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || !ck.Secure {
		t.Errorf("oauthd_csrf cookie HttpOnly %v SameSite %v Secure %v; want true Strict true", ck.HttpOnly, ck.SameSite, ck.Secure)
	}
	other := data.NewSecret("")
	tests := []struct {
		name    string
		cookies []*http.Cookie
		field   string
		origin  string
	}{
		{"no cookie", nil, tok, ""},
		{"no field", []*http.Cookie{ck}, "", ""},
		{"wrong field", []*http.Cookie{ck}, other, ""},
		{"cookie and field both attacker-chosen but different", []*http.Cookie{{Name: loginCSRFCookie, Value: other}}, tok, ""},
		{"foreign origin", []*http.Cookie{ck}, tok, "https://evil.example"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/auth/login", strings.NewReader(url.Values{
				"login": {"alice"}, "password": {alicePassword}, csrfField: {tc.field}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			for _, c := range tc.cookies {
				req.AddCookie(c)
			}
			rec := en.serve(req)
			if rec.Code != http.StatusForbidden {
				t.Errorf("status %d; want 403", rec.Code)
			}
			if cookie(rec, sessionCookie) != nil {
				t.Error("session cookie set despite CSRF failure")
			}
			checkPageHeaders(t, rec)
		})
	}
	// Same origin passes, and so does "null" (what browsers send for a
	// same-origin POST from a page with Referrer-Policy: no-referrer).
	for _, origin := range []string{"https://app.example", "null", ""} {
		req := httptest.NewRequest(http.MethodPost, "/auth/login", strings.NewReader(url.Values{
			"login": {"alice"}, "password": {alicePassword}, csrfField: {tok}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		req.AddCookie(ck)
		if rec := en.serve(req); rec.Code != http.StatusOK {
			t.Errorf("login with Origin %q = %d; want 200", origin, rec.Code)
		}
	}
}

func TestReturnToOpenRedirect(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{authorizePath + "?client_id=a", authorizePath + "?client_id=a"},
		{"https://evil.example/auth/oauth2/authorize?x=1", ""},
		{"//evil.example/auth/oauth2/authorize?x=1", ""},
		{`/\evil.example`, ""},
		{`/auth/oauth2/authorize?x=\`, ""},
		{"/auth/oauth2/authorize", ""},
		{"/auth/oauth2/authorizeX?x", ""},
		{"/auth/oauth2/authorize?x=1#frag", ""},
		{"/auth/oauth2/authorize?x=1\r\nLocation: https://evil", ""},
		{"/auth/oauth2/authorize?x=\x00", ""},
		{"/auth/login", ""},
		{"javascript:alert(1)", ""},
		{"/%2F%2Fevil.example", ""},
		{"", ""},
	}
	for _, tc := range tests {
		if got := safeReturnTo(tc.in); got != tc.want {
			t.Errorf("safeReturnTo(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
	// Through the router: a successful login never redirects off-site.
	en := newEnv(t, "")
	for _, rt := range []string{"https://evil.example/", "//evil.example/", `/\evil.example/`, "/\t/evil.example"} {
		ck, tok := en.loginForm()
		rec := en.post("/auth/login", url.Values{"login": {"alice"}, "password": {alicePassword}, csrfField: {tok}, "return_to": {rt}}, ck)
		if rec.Code != http.StatusOK || rec.Header().Get("Location") != "" {
			t.Errorf("login with return_to %q = %d Location %q; want 200 and no Location", rt, rec.Code, rec.Header().Get("Location"))
		}
		page := en.get("/auth/login?return_to=" + url.QueryEscape(rt))
		if strings.Contains(page.Body.String(), "evil.example") {
			t.Errorf("login page carries return_to %q", rt)
		}
	}
}

// loginFrom posts a login form from remote ("" = httptest's default
// address, 192.0.2.1).
func (en *env) loginFrom(remote, login, pw string) *httptest.ResponseRecorder {
	en.t.Helper()
	ck, tok := en.loginForm()
	req := httptest.NewRequest(http.MethodPost, "/auth/login", strings.NewReader(url.Values{
		"login": {login}, "password": {pw}, csrfField: {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if remote != "" {
		req.RemoteAddr = remote
	}
	req.AddCookie(ck)
	return en.serve(req)
}

// TestLoginRateLimit: failed logins are counted per (account, address),
// the account found by user ID whichever login name was typed. Past the
// limit that address gets 429 with Retry-After, even for the right
// password (no oracle), until the budget refills; the same user from
// another address is never stopped by it.
func TestLoginRateLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a password check per attempt until the limit")
	}
	en := newEnv(t, "")
	burst := loginLimits[throttle.Account].Burst
	// Successful logins are never throttled.
	for i := range 3 * burst {
		if rec := en.loginFrom("", "bob", bobPassword); rec.Code != http.StatusOK {
			t.Fatalf("successful login %d = %d; want 200", i, rec.Code)
		}
	}
	// Email and username, any case: one account.
	names := []string{"alice", "ALICE@example.com", "Alice", "alice@EXAMPLE.com", "aLiCe"}
	for i := range burst {
		if rec := en.loginFrom("", names[i%len(names)], "wrong"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("failure %d = %d; want 401", i, rec.Code)
		}
	}
	rec := en.loginFrom("", "alice@example.com", "wrong")
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("failure %d = %d; want 429", burst+1, rec.Code)
	}
	ra, err := strconv.Atoi(rec.Header().Get("Retry-After"))
	if err != nil || ra != 60 {
		t.Errorf("Retry-After = %q; want 60 (one attempt a minute)", rec.Header().Get("Retry-After"))
	}
	if !strings.Contains(rec.Body.String(), "Too many failed sign-in attempts") {
		t.Error("429 page does not explain the wait")
	}
	checkPageHeaders(t, rec)
	// From that address, even the right password waits (no oracle).
	if rec := en.loginFrom("", "alice", alicePassword); rec.Code != http.StatusTooManyRequests {
		t.Errorf("right password from the limited address = %d; want 429", rec.Code)
	}
	// From another address alice logs in: no per-account lockout.
	if rec := en.loginFrom("198.51.100.7:5555", "alice", alicePassword); rec.Code != http.StatusOK {
		t.Errorf("right password from another address = %d; want 200", rec.Code)
	}
	// Another user from the same address is not blocked by alice's limit.
	if rec := en.loginFrom("", "bob", bobPassword); rec.Code != http.StatusOK {
		t.Errorf("bob while alice blocked = %d; want 200", rec.Code)
	}
	// The block lifts by itself.
	en.advance(time.Minute)
	if rec := en.loginFrom("", "alice", alicePassword); rec.Code != http.StatusOK {
		t.Errorf("right password after a minute = %d; want 200", rec.Code)
	}
}

// TestLoginRateLimitUnknownLogin: a login that names no user is limited
// like an account, so the limit does not reveal which logins exist.
func TestLoginRateLimitUnknownLogin(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a password check per attempt until the limit")
	}
	en := newEnv(t, "")
	codes := func(login string) []int {
		var got []int
		for range loginLimits[throttle.Account].Burst + 1 {
			got = append(got, en.loginFrom("203.0.113.1:1", login, "wrong").Code)
		}
		return got
	}
	known, unknown := codes("alice"), codes("Mallory@example.com")
	if !slices.Equal(known, unknown) || known[len(known)-1] != http.StatusTooManyRequests {
		t.Errorf("statuses for a known login %v, an unknown one %v; want the same, ending in 429", known, unknown)
	}
}

// TestLoginRateLimitPerAddress: failures spread over many logins from one
// address hit the address's ceiling; other addresses are unaffected.
func TestLoginRateLimitPerAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a password check per attempt until the limit")
	}
	en := newEnv(t, "")
	for i := range loginLimits[throttle.Addr].Burst {
		if rec := en.loginFrom("", "user"+strconv.Itoa(i), "x"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("failure %d = %d; want 401", i, rec.Code)
		}
	}
	rec := en.loginFrom("", "bob", bobPassword)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("login from a spraying address = %d Retry-After %q; want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	if rec := en.loginFrom("198.51.100.7:5555", "bob", bobPassword); rec.Code != http.StatusOK {
		t.Errorf("login from another address = %d; want 200", rec.Code)
	}
}

func TestAuthorizeNeedsLogin(t *testing.T) {
	en := newEnv(t, "")
	target := authorizePath + "?" + authorizeQuery().Encode()
	rec := en.get(target)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("status %d; want 303", rec.Code)
	}
	loc, err := url.Parse(rec.Header().Get("Location"))
	if err != nil || loc.Path != loginPath || loc.Query().Get("return_to") != target {
		t.Errorf("Location %q; want /auth/login?return_to=%s", rec.Header().Get("Location"), target)
	}
	// An expired session counts as none.
	sess := en.login("alice", alicePassword)
	en.advance(12*time.Hour + time.Second)
	if rec := en.get(target, sess); rec.Code != http.StatusSeeOther {
		t.Errorf("with expired session = %d; want 303 to login", rec.Code)
	}
	// A forged cookie counts as none.
	forged := &http.Cookie{Name: sessionCookie, Value: data.NewSecret(data.PrefixSession)}
	if rec := en.get(target, forged); rec.Code != http.StatusSeeOther {
		t.Errorf("with forged session = %d; want 303 to login", rec.Code)
	}
}

func TestAuthorizeErrorsBeforeLogin(t *testing.T) {
	en := newEnv(t, "")
	q := authorizeQuery()
	q.Set("client_id", "nope")
	rec := en.get(authorizePath + "?" + q.Encode())
	if rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" {
		t.Fatalf("unknown client = %d Location %q; want 400 without Location", rec.Code, rec.Header().Get("Location"))
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("Content-Type %q; want text/html", ct)
	}
	if !strings.Contains(rec.Body.String(), "Unknown application") {
		t.Error("error page lacks the PageError title")
	}
	checkPageHeaders(t, rec)

	q = authorizeQuery()
	q.Set("scope", "BAD")
	rec = en.get(authorizePath + "?" + q.Encode())
	if rec.Code != http.StatusSeeOther || !strings.HasPrefix(rec.Header().Get("Location"), "https://app.acme.example/callback?error=invalid_scope") {
		t.Errorf("RedirectError = %d Location %q; want 303 to the callback with invalid_scope", rec.Code, rec.Header().Get("Location"))
	}
}

func TestConsentPage(t *testing.T) {
	en := newEnv(t, "https://app.example")
	sess := en.login("alice", alicePassword)
	rec := en.get(authorizePath+"?"+authorizeQuery().Encode(), sess)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d; want 200\n%s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	checkPageHeaders(t, rec)
	csp := rec.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "form-action 'self' https://app.acme.example") {
		t.Errorf("CSP %q does not allow the redirect origin in form-action", csp)
	}
	for _, want := range []string{
		"Acme Calendar Sync", "Developed by <span class=\"mono\">bob@example.com</span>", "wants to access your account",
		"Alice Example", "Not you? Sign out",
		"You will be sent to", "https://app.acme.example",
		`value="allow"`, `value="deny"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("consent page lacks %q", want)
		}
	}
	// Scopes grouped by level, user → team → organization, each with its
	// description.
	order := []string{
		"Your account", "List your bookings; view attendees", "BOOKING_READ", "View your profile.",
		"Your teams", "View team bookings.",
		"Your organization", "View memberships and users of the organization.",
	}
	pos := 0
	for _, w := range order {
		i := strings.Index(body[pos:], w)
		if i < 0 {
			t.Fatalf("consent page lacks %q after position %d (order of groups)", w, pos)
		}
		pos += i
	}
	if strings.Contains(body, "full access") {
		t.Error("scoped request shows the legacy warning")
	}
	// The form carries the session's CSRF token and the original query.
	f := decisionFields(t, body)
	s, _ := en.store.GetSession(context.Background(), data.Hash(sess.Value))
	if f.Get(csrfField) != s.CSRF {
		t.Errorf("form csrf_token %q; want the session's", f.Get(csrfField))
	}
	for k, v := range authorizeQuery() {
		if f.Get(k) != v[0] {
			t.Errorf("hidden %s = %q; want %q", k, f.Get(k), v[0])
		}
	}
}

func TestConsentPageEscapesClientName(t *testing.T) {
	en := newEnv(t, "")
	evil := testClient
	evil.Name = `<script>alert(1)</script>"><img src=x onerror=alert(2)>`
	evil.OwnerID, evil.UnclaimedOwner = 0, `<b>owner</b>@example.com`
	en.authz.parse = defaultParse(evil)
	sess := en.login("bob", bobPassword)
	q := authorizeQuery()
	q.Set("state", `"><script>alert(3)</script>`)
	rec := en.get(authorizePath+"?"+q.Encode(), sess)
	body := rec.Body.String()
	for _, bad := range []string{"<script>", "<img", "<b>", `"><img`, `"><script`} {
		if strings.Contains(body, bad) {
			t.Errorf("consent page contains unescaped %q", bad)
		}
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("escaped client name not shown")
	}
	if !strings.Contains(body, "Bob &lt;b&gt;Builder&lt;/b&gt;") {
		t.Error("escaped user name not shown")
	}
}

func TestConsentPageLegacy(t *testing.T) {
	en := newEnv(t, "")
	legacy := testClient
	legacy.Legacy = true
	legacy.Scopes = nil
	en.authz.parse = defaultParse(legacy)
	sess := en.login("alice", alicePassword)
	q := authorizeQuery()
	q.Del("scope")
	rec := en.get(authorizePath+"?"+q.Encode(), sess)
	if !strings.Contains(rec.Body.String(), "This app was registered before permissions existed and will get full access to your account") {
		t.Errorf("legacy consent page lacks the full-access warning:\n%s", rec.Body)
	}
}

func TestDecision(t *testing.T) {
	tests := []struct {
		action   string
		wantLoc  string
		approved int
		denied   int
	}{
		{"allow", "https://app.acme.example/callback?code=oauthd_ac_test&state=xyz", 1, 0},
		{"deny", "https://app.acme.example/callback?error=access_denied&state=xyz", 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.action, func(t *testing.T) {
			en := newEnv(t, "")
			sess := en.login("alice", alicePassword)
			f := en.consentForm(sess)
			f.Set("action", tc.action)
			f.Set("extra", "ignored")
			rec := en.post(authorizePath, f, sess)
			if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != tc.wantLoc {
				t.Fatalf("decision = %d Location %q; want 303 %q", rec.Code, rec.Header().Get("Location"), tc.wantLoc)
			}
			a, d := en.authz.counts()
			if a != tc.approved || d != tc.denied {
				t.Fatalf("approvals, denials = %d, %d; want %d, %d", a, d, tc.approved, tc.denied)
			}
			var got decision
			if a == 1 {
				got = en.authz.approvals[0]
			} else {
				got = en.authz.denials[0]
			}
			if got.UserID != en.alice.ID {
				t.Errorf("decision for user %d; want %d", got.UserID, en.alice.ID)
			}
			want := authorizeQuery()
			if got.Q.Encode() != want.Encode() {
				t.Errorf("query passed on = %v; want exactly %v", got.Q, want)
			}
		})
	}
}

func TestDecisionRefused(t *testing.T) {
	en := newEnv(t, "https://app.example")
	alice := en.login("alice", alicePassword)
	bob := en.login("bob", bobPassword)
	aliceForm := en.consentForm(alice)
	aliceForm.Set("action", "allow")
	bobForm := en.consentForm(bob)

	tests := []struct {
		name   string
		form   func() url.Values
		cookie *http.Cookie
		origin string
		want   int
	}{
		{"no csrf", func() url.Values { f := clone(aliceForm); f.Del(csrfField); return f }, alice, "", http.StatusForbidden},
		{"wrong csrf", func() url.Values { f := clone(aliceForm); f.Set(csrfField, data.NewSecret("")); return f }, alice, "", http.StatusForbidden},
		// Bob's page tricks alice's browser: bob's token with alice's cookie.
		{"another user's csrf", func() url.Values { f := clone(aliceForm); f.Set(csrfField, bobForm.Get(csrfField)); return f }, alice, "", http.StatusForbidden},
		// Alice's token without alice's cookie, with bob's: refused.
		{"another user's cookie", func() url.Values { return clone(aliceForm) }, bob, "", http.StatusForbidden},
		{"foreign origin", func() url.Values { return clone(aliceForm) }, alice, "https://evil.example", http.StatusForbidden},
		{"unknown action", func() url.Values { f := clone(aliceForm); f.Set("action", "maybe"); return f }, alice, "", http.StatusBadRequest},
		{"no action", func() url.Values { f := clone(aliceForm); f.Del("action"); return f }, alice, "", http.StatusBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, authorizePath, strings.NewReader(tc.form().Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			req.AddCookie(tc.cookie)
			rec := en.serve(req)
			if rec.Code != tc.want || rec.Header().Get("Location") != "" {
				t.Errorf("status %d Location %q; want %d, no Location", rec.Code, rec.Header().Get("Location"), tc.want)
			}
			checkPageHeaders(t, rec)
			if a, d := en.authz.counts(); a != 0 || d != 0 {
				t.Errorf("approvals, denials = %d, %d; want none", a, d)
			}
		})
	}

	// No session at all: to the login page, nothing decided.
	rec := en.post(authorizePath, aliceForm)
	if rec.Code != http.StatusSeeOther || !strings.HasPrefix(rec.Header().Get("Location"), loginPath+"?return_to=") {
		t.Errorf("decision without session = %d Location %q; want 303 to login", rec.Code, rec.Header().Get("Location"))
	}
	if a, d := en.authz.counts(); a != 0 || d != 0 {
		t.Errorf("approvals, denials = %d, %d; want none", a, d)
	}

	// With bob's own cookie and token, the decision is bob's, never alice's.
	bobForm.Set("action", "allow")
	if rec := en.post(authorizePath, bobForm, bob); rec.Code != http.StatusSeeOther {
		t.Fatalf("bob's own decision = %d; want 303", rec.Code)
	}
	if en.authz.approvals[0].UserID != en.bob.ID {
		t.Errorf("approval recorded for user %d; want bob (%d)", en.authz.approvals[0].UserID, en.bob.ID)
	}
}

func clone(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

func TestDecisionAuthorizerErrors(t *testing.T) {
	en := newEnv(t, "")
	sess := en.login("alice", alicePassword)
	f := en.consentForm(sess)
	f.Set("action", "allow")

	en.authz.approve = func(url.Values, int64) (string, error) {
		return "", issuer.NewPageError("Application not approved", "This application is not available.")
	}
	rec := en.post(authorizePath, f, sess)
	if rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" || !strings.Contains(rec.Body.String(), "Application not approved") {
		t.Errorf("PageError on Allow = %d Location %q; want 400 page, no Location", rec.Code, rec.Header().Get("Location"))
	}

	en.authz.approve = func(url.Values, int64) (string, error) {
		return "", &issuer.RedirectError{URL: "https://app.acme.example/callback?error=invalid_request", Err: issuer.ErrInvalidRequest}
	}
	rec = en.post(authorizePath, f, sess)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "https://app.acme.example/callback?error=invalid_request" {
		t.Errorf("RedirectError on Allow = %d Location %q; want 303", rec.Code, rec.Header().Get("Location"))
	}

	en.authz.approve = func(url.Values, int64) (string, error) { return "", context.DeadlineExceeded }
	rec = en.post(authorizePath, f, sess)
	if rec.Code != http.StatusInternalServerError || strings.Contains(rec.Body.String(), "deadline") {
		t.Errorf("other error on Allow = %d; want 500 with a generic page", rec.Code)
	}

	// A store outage: the 503 page with Retry-After, never a 500.
	en.authz.approve = func(url.Values, int64) (string, error) {
		return "", fmt.Errorf("create authorization code: %w: connection refused", data.ErrUnavailable)
	}
	rec = en.post(authorizePath, f, sess)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "Temporarily unavailable") {
		t.Errorf("store outage on Allow = %d Retry-After %q; want the 503 page with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
}

func TestLogout(t *testing.T) {
	en := newEnv(t, "")
	ctx := context.Background()
	sess := en.login("alice", alicePassword)
	s, _ := en.store.GetSession(ctx, data.Hash(sess.Value))

	// Without the session's CSRF token: refused, session kept.
	if rec := en.post(logoutPath, url.Values{csrfField: {"x"}}, sess); rec.Code != http.StatusForbidden {
		t.Errorf("logout without CSRF = %d; want 403", rec.Code)
	}
	if _, err := en.store.GetSession(ctx, s.Hash); err != nil {
		t.Fatalf("session gone after refused logout: %v", err)
	}

	rt := authorizePath + "?" + authorizeQuery().Encode()
	rec := en.post(logoutPath, url.Values{csrfField: {s.CSRF}, "return_to": {rt}}, sess)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != loginURL(rt) {
		t.Errorf("logout = %d Location %q; want 303 %q", rec.Code, rec.Header().Get("Location"), loginURL(rt))
	}
	if _, err := en.store.GetSession(ctx, s.Hash); !errorsIsNotFound(err) {
		t.Errorf("session after logout: err = %v; want ErrNotFound", err)
	}
	if c := cookie(rec, sessionCookie); c == nil || c.MaxAge >= 0 {
		t.Error("logout did not clear the session cookie")
	}
	// The old cookie no longer works.
	if rec := en.get(rt, sess); rec.Code != http.StatusSeeOther {
		t.Errorf("consent with logged-out cookie = %d; want 303 to login", rec.Code)
	}
	// Logging out without a session shows the signed-out page.
	rec = en.post(logoutPath, url.Values{})
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "You are signed out") {
		t.Errorf("logout without session = %d; want 200 signed-out page", rec.Code)
	}
}

// TestLogoutDuringOutage: with the database away, a sign-out still clears
// the browser's cookie (503 page saying so); a cross-origin POST clears
// nothing.
func TestLogoutDuringOutage(t *testing.T) {
	en := newEnv(t, "https://auth.example")
	sess := en.login("alice", alicePassword)
	s, _ := en.store.GetSession(context.Background(), data.Hash(sess.Value))
	en.store.Close() // the memory store's outage: every call fails with data.ErrUnavailable

	cross := httptest.NewRequest(http.MethodPost, logoutPath, strings.NewReader(url.Values{csrfField: {s.CSRF}}.Encode()))
	cross.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	cross.Header.Set("Origin", "https://evil.example")
	cross.AddCookie(sess)
	rec := httptest.NewRecorder()
	en.e.ServeHTTP(rec, cross)
	if rec.Code != http.StatusServiceUnavailable || cookie(rec, sessionCookie) != nil {
		t.Errorf("cross-origin logout in an outage = %d, cookie %v; want 503 and the cookie untouched", rec.Code, cookie(rec, sessionCookie))
	}

	rec = en.post(logoutPath, url.Values{csrfField: {s.CSRF}}, sess)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "no longer holds your sign-in") {
		t.Errorf("logout in an outage = %d Retry-After %q; want the 503 page saying the browser is signed out\n%s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if c := cookie(rec, sessionCookie); c == nil || c.MaxAge >= 0 {
		t.Error("logout in an outage did not clear the session cookie")
	}
}

// checkPageHeaders asserts the security headers of every page.
func checkPageHeaders(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	consenttest.CheckPageHeaders(t, rec.Header())
}

func TestSecurityHeadersOnEveryPage(t *testing.T) {
	en := newEnv(t, "")
	sess := en.login("alice", alicePassword)
	ck, tok := en.loginForm()
	q := authorizeQuery().Encode()
	pages := []struct {
		name string
		rec  *httptest.ResponseRecorder
	}{
		{"login", en.get("/auth/login")},
		{"login failure", en.post("/auth/login", url.Values{"login": {"x"}, "password": {"y"}, csrfField: {tok}}, ck)},
		{"login success", en.post("/auth/login", url.Values{"login": {"alice"}, "password": {alicePassword}, csrfField: {tok}}, ck)},
		{"consent", en.get(authorizePath+"?"+q, sess)},
		{"redirect to login", en.get(authorizePath + "?" + q)},
		{"error page", en.get(authorizePath + "?client_id=nope")},
		{"logged out", en.post(logoutPath, url.Values{})},
		{"bad decision", en.post(authorizePath, url.Values{"action": {"allow"}}, sess)},
	}
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) { checkPageHeaders(t, p.rec) })
	}
}

func TestStylesheet(t *testing.T) {
	en := newEnv(t, "")
	page := en.get("/auth/login").Body.String()
	if !strings.Contains(page, `href="`+en.h.cssURL+`"`) {
		t.Fatalf("login page does not link %s", en.h.cssURL)
	}
	rec := en.get(en.h.cssURL)
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/css") ||
		!strings.Contains(rec.Header().Get("Cache-Control"), "max-age=31536000") || rec.Body.Len() == 0 {
		t.Errorf("stylesheet = %d %q %q; want 200 text/css, long cache", rec.Code, rec.Header().Get("Content-Type"), rec.Header().Get("Cache-Control"))
	}
}

func TestRedirectOrigin(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://app.example/cb?x=1", "https://app.example"},
		{"http://127.0.0.1:8080/cb", "http://127.0.0.1:8080"},
		{"https://APP.example:443/cb", "https://app.example:443"},
		{"com.example.app:/oauth", "com.example.app:"},
		{"https://a.example;script-src *", ""},
		{"https://a.example'/x", ""},
		{"1http://x", ""},
	}
	for _, tc := range tests {
		if got := redirectOrigin(tc.in); got != tc.want {
			t.Errorf("redirectOrigin(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
