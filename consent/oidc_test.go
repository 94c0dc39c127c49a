package consent

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"oauthd/consent/handover"
	"oauthd/data"
	"oauthd/issuer"
)

// TestAuthorizeLoginHint: login_hint (OpenID Connect Core §3.1.2.1)
// reaches the login form's login field, escaped; a control character
// drops it.
func TestAuthorizeLoginHint(t *testing.T) {
	en := newEnv(t, "")
	q := authorizeQuery()
	q.Set("login_hint", `ann"<x>@example.com`)
	rec := en.get(authorizePath + "?" + q.Encode())
	loc, _ := url.Parse(rec.Header().Get("Location"))
	if rec.Code != http.StatusSeeOther || loc.Path != loginPath || loc.Query().Get("login_hint") != `ann"<x>@example.com` {
		t.Fatalf("authorize without session = %d %q; want the login page with login_hint", rec.Code, rec.Header().Get("Location"))
	}
	page := en.get(loc.String())
	if page.Code != http.StatusOK || !strings.Contains(page.Body.String(), `value="ann&#34;&lt;x&gt;@example.com"`) {
		t.Fatalf("login page does not prefill the (escaped) hint:\n%s", page.Body)
	}
	if page := en.get(loginPath + "?login_hint=" + url.QueryEscape("a\nb")); strings.Contains(page.Body.String(), "a\nb") {
		t.Fatal("a login_hint with a control character was used")
	}
}

// TestAuthorizeByPOST: the authorization endpoint takes the request as a
// POST form too (Core §3.1.2.1): no session → the login page; a session
// → the consent page. The consent form's own POST still needs its CSRF
// token.
func TestAuthorizeByPOST(t *testing.T) {
	en := newEnv(t, "")
	rec := en.post(authorizePath, authorizeQuery())
	if loc, _ := url.Parse(rec.Header().Get("Location")); rec.Code != http.StatusSeeOther || loc.Path != loginPath {
		t.Fatalf("POST authorize without session = %d %q; want 303 to the login page", rec.Code, rec.Header().Get("Location"))
	}
	sess := en.login("alice", alicePassword)
	rec = en.post(authorizePath, authorizeQuery(), sess)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "wants to access your account") {
		t.Fatalf("POST authorize with a session = %d; want the consent page", rec.Code)
	}
	form := authorizeQuery()
	form.Set("action", "allow")
	if rec := en.post(authorizePath, form, sess); rec.Code != http.StatusForbidden {
		t.Fatalf("a decision without the CSRF token = %d; want 403", rec.Code)
	}
	if a, _ := en.authz.counts(); a != 0 {
		t.Fatalf("%d approvals; want none", a)
	}
}

// TestSessionAuthTime: a password login's session records the login time
// as auth_time, and the approval passes it on.
func TestSessionAuthTime(t *testing.T) {
	en := newEnv(t, "")
	en.advance(time.Hour)
	sess := en.login("alice", alicePassword)
	s, err := en.store.GetSession(context.Background(), data.Hash(sess.Value))
	if err != nil || !s.AuthTime.Equal(en.clock()) {
		t.Fatalf("session auth_time = %v, %v; want the login time %v", s.AuthTime, err, en.clock())
	}
	en.advance(10 * time.Minute)
	fields := en.consentForm(sess)
	fields.Set("action", "allow")
	if rec := en.post(authorizePath, fields, sess); rec.Code != http.StatusSeeOther {
		t.Fatalf("allow = %d", rec.Code)
	}
	if got := en.authz.lastLogin; got.UserID != en.alice.ID || !got.AuthTime.Equal(s.AuthTime) {
		t.Fatalf("ApproveLogin got %+v; want alice at %v", got, s.AuthTime)
	}
}

// TestHandoverAuthTime: after a login handover the session's auth_time
// is the platform's assertion time, not the time the session was made.
func TestHandoverAuthTime(t *testing.T) {
	assertedAt := time.Date(2026, 3, 1, 11, 59, 30, 0, time.UTC)
	v := &fakeVerifier{}
	en := newHandoverEnv(t, "http://app.example", v)
	start := en.get(loginPath + "?return_to=" + url.QueryEscape(authorizePath+"?"+authorizeQuery().Encode()))
	loc, _ := url.Parse(start.Header().Get("Location"))
	ck := cookie(start, handoverCookie)
	if ck == nil {
		t.Fatal("no handover cookie")
	}
	v.a = handover.Assertion{Issuer: "https://platform.example", Subject: "p-42", Email: "p42@example.com", Name: "P",
		TimeZone: new("UTC"), Challenge: loc.Query().Get("challenge"), ID: "jti-1", IssuedAt: assertedAt, ExpiresAt: assertedAt.Add(time.Minute)}
	rec := en.get(handoverPath+"?assertion=x", ck)
	sess := cookie(rec, sessionCookie)
	if rec.Code != http.StatusSeeOther || sess == nil {
		t.Fatalf("handover = %d %s", rec.Code, rec.Body)
	}
	s, err := en.store.GetSession(context.Background(), data.Hash(sess.Value))
	if err != nil || !s.AuthTime.Equal(assertedAt) || s.CreatedAt.Equal(assertedAt) {
		t.Fatalf("session %+v, %v; want auth_time %v (the assertion's), created now", s, err, assertedAt)
	}
}

// TestEndSession: the end-session endpoint's pages (RP-Initiated Logout
// 1.0): a hint of the session's user ends it (redirect only when the
// issuer allowed one); another user's hint, or none, asks first and
// never redirects; the application's form POST works like the GET.
func TestEndSession(t *testing.T) {
	en := newEnv(t, "")
	ctx := context.Background()
	alice := strconv.FormatInt(en.alice.ID, 10)
	en.authz.logout = func(q url.Values) *issuer.LogoutRequest {
		switch q.Get("id_token_hint") {
		case "alice-with-uri":
			return &issuer.LogoutRequest{Subject: alice, ClientID: "c", ClientName: "Acme", Redirect: "https://rp.example/out?state=s"}
		case "alice":
			return &issuer.LogoutRequest{Subject: alice, ClientID: "c", ClientName: "Acme"}
		case "bob":
			return &issuer.LogoutRequest{Subject: strconv.FormatInt(en.bob.ID, 10), ClientID: "c", ClientName: "Acme"}
		}
		return &issuer.LogoutRequest{}
	}
	live := func(sess *http.Cookie) bool {
		_, err := en.store.GetSession(ctx, data.Hash(sess.Value))
		return err == nil
	}

	sess := en.login("alice", alicePassword)
	for _, hint := range []string{"", "bob", "forged"} {
		rec := en.get(logoutPath+"?id_token_hint="+hint+"&post_logout_redirect_uri=https://rp.example/out", sess)
		if rec.Code != http.StatusOK || rec.Header().Get("Location") != "" || !strings.Contains(rec.Body.String(), "Sign out?") || !live(sess) {
			t.Fatalf("hint %q: %d %q; want the question, no redirect, the session kept", hint, rec.Code, rec.Header().Get("Location"))
		}
	}
	// Answering the question: the CSRF-protected form.
	page := en.get(logoutPath+"?id_token_hint=bob", sess)
	tok := decisionFields(t, page.Body.String()).Get(csrfField)
	if rec := en.post(logoutPath, url.Values{csrfField: {tok}}, sess); rec.Code != http.StatusOK || live(sess) {
		t.Fatalf("confirmed sign-out = %d; want the signed-out page and the session gone", rec.Code)
	}

	sess = en.login("alice", alicePassword)
	rec := en.get(logoutPath+"?id_token_hint=alice", sess)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "You are signed out") || live(sess) {
		t.Fatalf("own hint without URI = %d; want signed out, no redirect", rec.Code)
	}
	sess = en.login("alice", alicePassword)
	rec = en.get(logoutPath+"?id_token_hint=alice-with-uri", sess)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "https://rp.example/out?state=s" || live(sess) {
		t.Fatalf("own hint with URI = %d %q; want 303 to the URI and the session gone", rec.Code, rec.Header().Get("Location"))
	}
	// The application's POST form (no CSRF token: not the site's form).
	sess = en.login("alice", alicePassword)
	rec = en.post(logoutPath, url.Values{"id_token_hint": {"alice-with-uri"}}, sess)
	if rec.Code != http.StatusSeeOther || live(sess) {
		t.Fatalf("POST end session = %d; want 303 and the session gone", rec.Code)
	}
	// No session: a redirect only where the issuer allowed it.
	if rec := en.get(logoutPath + "?id_token_hint=forged&post_logout_redirect_uri=https://evil.example/"); rec.Code != http.StatusOK || rec.Header().Get("Location") != "" {
		t.Fatalf("no session, forged hint = %d %q; want the signed-out page", rec.Code, rec.Header().Get("Location"))
	}
}

// TestConsentPageOIDCScopes: the consent page says the OpenID Connect
// scopes in plain words, under their own heading.
func TestConsentPageOIDCScopes(t *testing.T) {
	en := newEnv(t, "")
	sess := en.login("alice", alicePassword)
	q := authorizeQuery()
	q.Set("scope", "openid profile email PROFILE_READ")
	rec := en.get(authorizePath+"?"+q.Encode(), sess)
	body := rec.Body.String()
	for _, want := range []string{"Who you are", "Sign you in: learn which account on the platform is yours",
		"See your name, username and time zone.", "See your email address.", "Your account"} {
		if !strings.Contains(body, want) {
			t.Errorf("consent page lacks %q", want)
		}
	}
	if strings.Index(body, "Who you are") > strings.Index(body, "Your account") {
		t.Error("the identity scopes should come first")
	}
}
