package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"oauthd/consent/consenttest"
)

// Issue 5 item 4, against the real server: bad input at every endpoint
// answers the right 4xx (never 500) and changes nothing stored. The same
// inputs are unit-tested in package issuer and consent (TestTokenErrors,
// TestParseAuthorizePageErrors, TestDecisionRefused, TestBadFormBodies...);
// these prove the assembled server (middleware, body limit, router, header
// limits) behaves the same. Item 5 (master key) and item 6 (audit log) are
// at the end.

// storedState is what the CLI shows of the database, without the fields a
// successful authentication may move (a secret's last_used_at).
func storedState(t *testing.T, db, clientID string) string {
	t.Helper()
	var show map[string]any
	oneJSON(t, mustOauthd(t, db, "", "clients", "show", clientID, "--json"), &show)
	if ss, ok := show["secrets"].([]any); ok {
		for _, s := range ss {
			delete(s.(map[string]any), "last_used_at")
		}
	}
	b, _ := json.Marshal(show)
	return string(b) + "\n" + mustOauthd(t, db, "", "keys", "list", "--json") + mustOauthd(t, db, "", "users", "list", "--json")
}

// rawPost sends body with content type ct (none when "") and optional
// Basic credentials, and returns status, headers and body.
func rawPost(t *testing.T, endpoint, ct string, body io.Reader, cl *testClient) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, body)
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if cl != nil {
		req.SetBasicAuth(url.QueryEscape(cl.ID), url.QueryEscape(cl.Secret))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", endpoint, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// chunked hides the length of r from the client, so that the body is sent
// with Transfer-Encoding: chunked.
type chunked struct{ r io.Reader }

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

const form = "application/x-www-form-urlencoded"

func TestAttacksTokenEndpoints(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db)
	cl := newTestClient(t, db, "victim")
	first := initialTokens(t, s.base, cl, 1)[0]
	rt := first.RefreshToken
	before := storedState(t, db, cl.ID)

	big := "grant_type=refresh_token&refresh_token=" + strings.Repeat("A", 70<<10)
	type attack struct {
		name   string
		ct     string
		body   func() io.Reader
		status int
		code   string // OAuth error code; "" for the 413
	}
	rtForm := func(kv ...string) func() io.Reader {
		return func() io.Reader { return strings.NewReader(strings.Join(kv, "&")) }
	}
	attacks := []attack{
		{"body over 64 KiB", form, func() io.Reader { return strings.NewReader(big) }, 413, ""},
		{"chunked body over 64 KiB", form, func() io.Reader { return chunked{strings.NewReader(big)} }, 413, ""},
		{"missing Content-Type", "", rtForm("grant_type=refresh_token", "refresh_token="+rt), 400, "invalid_request"},
		{"text/plain", "text/plain", rtForm("grant_type=refresh_token", "refresh_token="+rt), 400, "invalid_request"},
		{"multipart", "multipart/form-data; boundary=x", rtForm("grant_type=refresh_token", "refresh_token="+rt), 400, "invalid_request"},
		{"form in another charset", form + "; charset=iso-8859-1", rtForm("grant_type=refresh_token", "refresh_token="+rt), 400, "invalid_request"},
		{"grant_type twice", form, rtForm("grant_type=refresh_token", "grant_type=refresh_token", "refresh_token="+rt), 400, "invalid_request"},
		{"refresh_token twice", form, rtForm("grant_type=refresh_token", "refresh_token="+rt, "refresh_token="+rt), 400, "invalid_request"},
		{"invalid UTF-8", form, rtForm("grant_type=refresh_token", "refresh_token="+rt+"%ff"), 400, "invalid_request"},
		{"NUL byte", form, rtForm("grant_type=refresh_token", "refresh_token="+rt+"%00"), 400, "invalid_request"},
		{"CRLF in a value", form, rtForm("grant_type=refresh_token", "refresh_token="+rt+"%0d%0aX-Injected:%201"), 400, "invalid_grant"},
		{"value of 5000 bytes", form, rtForm("grant_type=refresh_token", "refresh_token="+strings.Repeat("x", 5000)), 400, "invalid_request"},
		{"malformed escape", form, rtForm("grant_type=refresh_token", "refresh_token=%zz"), 400, "invalid_request"},
		{"JSON duplicate key", "application/json", func() io.Reader {
			return strings.NewReader(`{"grant_type":"refresh_token","refresh_token":"` + rt + `","refresh_token":"` + rt + `"}`)
		}, 400, "invalid_request"},
		{"JSON nested value", "application/json", func() io.Reader { return strings.NewReader(`{"grant_type":{"a":1}}`) }, 400, "invalid_request"},
		{"token endpoint by GET-style query", form, rtForm(), 400, "invalid_request"},
	}
	for _, path := range []string{"/v2/auth/oauth2/token", "/v2/auth/oauth2/revoke", "/v2/auth/oauth2/introspect"} {
		for _, a := range attacks {
			t.Run(strings.TrimPrefix(path, "/v2/auth/oauth2/")+"/"+a.name, func(t *testing.T) {
				status, h, body := rawPost(t, s.base+path, a.ct, a.body(), &cl)
				if status >= 500 {
					t.Fatalf("= %d %s; a bad request must never be a 5xx", status, body)
				}
				if h.Get("X-Injected") != "" {
					t.Errorf("a header was injected: %v", h)
				}
				if path != "/v2/auth/oauth2/token" && a.code == "invalid_grant" {
					// These endpoints read token, not refresh_token.
					if status != http.StatusBadRequest {
						t.Errorf("= %d %s; want 400", status, body)
					}
					return
				}
				if status != a.status {
					t.Errorf("= %d %s; want %d", status, body, a.status)
				}
				if a.code != "" {
					var e struct{ Error string }
					if json.Unmarshal([]byte(body), &e) != nil || e.Error != a.code {
						t.Errorf("body %s; want error %s", body, a.code)
					}
				}
			})
		}
	}

	if after := storedState(t, db, cl.ID); after != before {
		t.Errorf("stored data changed under attack:\nbefore %s\nafter  %s", before, after)
	}
	// The chain was never rotated or revoked by any of it: the token still
	// works, exactly once.
	r, err := refresh(t.Context(), http.DefaultClient, s.base, cl, rt, nil)
	if err != nil || r.Status != http.StatusOK {
		t.Errorf("the refresh token after the attacks = %+v, %v; want 200", r, err)
	}
}

// noFollow is a client that returns redirects instead of following them.
var noFollow = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func TestAttacksAuthorizeEndpoint(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db)
	cl := newTestClient(t, db, "owner")
	before := storedState(t, db, cl.ID)
	_, challenge := consenttest.PKCE()
	good := url.Values{
		"response_type": {"code"}, "client_id": {cl.ID}, "redirect_uri": {testRedirectURI},
		"scope": {testScopes}, "state": {"st"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"},
	}
	with := func(k, v string) string {
		q := url.Values{}
		for kk, vv := range good {
			q[kk] = vv
		}
		q.Set(k, v)
		return q.Encode()
	}
	twice := func(k string) string { return good.Encode() + "&" + k + "=" + url.QueryEscape(good.Get(k)) }
	tests := []struct {
		name  string
		query string // raw, already escaped
	}{
		{"CRLF in redirect_uri", with("redirect_uri", testRedirectURI+"\r\nSet-Cookie: injected=1")},
		{"CRLF in state", with("state", "x\r\nSet-Cookie: injected=1")},
		{"javascript: redirect_uri", with("redirect_uri", "javascript:alert(document.cookie)")},
		{"data: redirect_uri", with("redirect_uri", "data:text/html,<script>alert(1)</script>")},
		{"redirect_uri of another host", with("redirect_uri", "http://evil.example/cb")},
		{"redirect_uri with extra path", with("redirect_uri", testRedirectURI+"/../evil")},
		{"redirect_uri with user info", with("redirect_uri", "http://127.0.0.1:9@evil.example/cb")},
		{"invalid UTF-8 in client_id", strings.Replace(good.Encode(), "client_id="+cl.ID, "client_id=%ff%fe", 1)},
		{"invalid UTF-8 in state", with("state", "a\xffb")},
		{"invalid UTF-8 in scope", with("scope", "PROFILE_READ \xff")},
		{"NUL in client_id", strings.Replace(good.Encode(), "client_id="+cl.ID, "client_id="+cl.ID+"%00", 1)},
		{"NUL in redirect_uri", with("redirect_uri", testRedirectURI+"\x00")},
		{"NUL in code_challenge", with("code_challenge", challenge+"\x00")},
		{"client_id twice", twice("client_id")},
		{"redirect_uri twice", twice("redirect_uri")},
		{"state twice", twice("state")},
		{"scope twice", twice("scope")},
		{"state of 20000 bytes", with("state", strings.Repeat("s", 20000))},
		{"scope of 20000 bytes", with("scope", strings.Repeat("PROFILE_READ ", 1500))},
		{"query over the header limit", with("state", strings.Repeat("s", 40000))},
		{"malformed escape", good.Encode() + "&x=%zz"},
	}
	for _, tc := range tests {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			t.Run(method+"/"+tc.name, func(t *testing.T) {
				var req *http.Request
				if method == http.MethodGet {
					req, _ = http.NewRequest(method, s.base+"/auth/oauth2/authorize?"+tc.query, nil)
				} else {
					// A consent POST without a session or CSRF token.
					req, _ = http.NewRequest(method, s.base+"/auth/oauth2/authorize?"+tc.query, strings.NewReader("action=allow"))
					req.Header.Set("Content-Type", form)
				}
				resp, err := noFollow.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode >= 500 {
					t.Fatalf("= %d %s; a bad request must never be a 5xx", resp.StatusCode, body)
				}
				for _, c := range resp.Cookies() {
					if c.Name == "injected" {
						t.Errorf("a cookie was injected: %v", resp.Header)
					}
				}
				loc := resp.Header.Get("Location")
				if strings.ContainsAny(loc, "\r\n\x00") {
					t.Errorf("Location %q carries control characters", loc)
				}
				if loc != "" {
					u, err := url.Parse(loc)
					if err != nil {
						t.Fatalf("Location %q: %v", loc, err)
					}
					// Only to our own pages (login) or to the registered
					// redirect URI with an error, never with a code.
					switch {
					case u.Host == "" || "http://"+u.Host == s.base:
					case strings.HasPrefix(loc, testRedirectURI+"?"):
						if u.Query().Get("code") != "" || u.Query().Get("error") == "" {
							t.Errorf("redirect to the client %s; want an error, no code", loc)
						}
					default:
						t.Errorf("redirect to %s; want the server itself or the registered redirect URI", loc)
					}
				}
				if bytes := string(body); strings.Contains(bytes, "<script>alert") || strings.Contains(bytes, "javascript:alert") {
					t.Errorf("the page reflects the attacker's markup unescaped")
				}
			})
		}
	}
	if after := storedState(t, db, cl.ID); after != before {
		t.Errorf("stored data changed under attack:\nbefore %s\nafter  %s", before, after)
	}
}

// TestAttacksRawRequests sends what net/http's client refuses to send: raw
// control characters in the request line and header injection.
func TestAttacksRawRequests(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db)
	host := strings.TrimPrefix(s.base, "http://")
	for _, line := range []string{
		"GET /auth/oauth2/authorize?client_id=a\x00b HTTP/1.1",
		"GET /auth/oauth2/authorize?redirect_uri=http://x/\rSet-Cookie:%20a=b HTTP/1.1",
		"GET /auth/oauth2/authorize?state=\xff\xfe HTTP/1.1",
		"POST /v2/auth/oauth2/token\x00 HTTP/1.1",
	} {
		t.Run(strconv.Quote(line), func(t *testing.T) {
			c, err := net.DialTimeout("tcp", host, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(c, "%s\r\nHost: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", line, host)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("no HTTP answer: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode >= 500 || resp.StatusCode < 400 && resp.StatusCode != http.StatusSeeOther {
				t.Errorf("= %d; want a 4xx (or the redirect to the login page)", resp.StatusCode)
			}
			if resp.Header.Get("Set-Cookie") != "" && strings.Contains(resp.Header.Get("Set-Cookie"), "a=b") {
				t.Errorf("a cookie was injected: %v", resp.Header)
			}
		})
	}
	waitReady(t, s.base) // still serving
}

var hiddenRE = regexp.MustCompile(`<input[^>]*type="hidden"[^>]*>`)
var attrRE = regexp.MustCompile(`(name|value)="([^"]*)"`)

// consentForm returns the hidden fields of the consent page at u, opened
// with b's session.
func consentForm(t *testing.T, b *consenttest.Browser, u string) (url.Values, string) {
	t.Helper()
	resp, err := b.Client.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("consent page = %d %s %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	vals := url.Values{}
	for _, in := range hiddenRE.FindAllString(string(body), -1) {
		var name, value string
		for _, m := range attrRE.FindAllStringSubmatch(in, -1) {
			if m[1] == "name" {
				name = m[2]
			} else {
				value = htmlUnescape(m[2])
			}
		}
		if name != "" {
			vals.Set(name, value)
		}
	}
	return vals, string(body)
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&quot;", `"`).Replace(s)
}

// TestAttacksConsentPages: a client name with markup, consent POSTs without
// or with a wrong CSRF token or with another user's session, on the real
// pages. Nothing is granted: no redirect carries a code.
func TestAttacksConsentPages(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db)
	alice := newTestClient(t, db, "alice")
	bob := newTestClient(t, db, "bob")
	evilName := `<script>alert("x")</script><img src=x onerror=alert(1)>`
	mustOauthd(t, db, "", "clients", "create", "--owner", "alice@example.com", "--name", evilName,
		"--redirect-uri", testRedirectURI, "--scope", "PROFILE_READ,BOOKING_READ", "--json")
	var list []struct {
		ClientID string `json:"client_id"`
		Name     string `json:"name"`
	}
	oneJSON(t, mustOauthd(t, db, "", "clients", "list", "--json"), &list)
	evil := testClient{Login: "alice"}
	for _, c := range list {
		if c.Name == evilName {
			evil.ID = c.ClientID
		}
	}
	mustOauthd(t, db, "", "clients", "approve", evil.ID)

	// Log alice and bob in (each through a full flow of their own client).
	ba, bb := consenttest.New(), consenttest.New()
	authorizeCode(t, ba, s.base, alice)
	authorizeCode(t, bb, s.base, bob)
	before := storedState(t, db, evil.ID)

	_, challenge := consenttest.PKCE()
	page := authorizeURL(s.base, evil, "st", challenge)
	vals, body := consentForm(t, ba, page)
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
		t.Error("the consent page shows the client's name unescaped")
	}
	if !strings.Contains(body, "&lt;script&gt;alert(") {
		t.Error("the consent page does not show the client's name (escaped)")
	}
	if vals.Get("csrf_token") == "" {
		t.Fatalf("no csrf_token in the consent form: %v", vals)
	}

	post := func(b *consenttest.Browser, v url.Values) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, page, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", form)
		c := *b.Client
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Location")
	}
	allow := func(v url.Values) url.Values {
		c := url.Values{}
		for k, vv := range v {
			c[k] = vv
		}
		c.Set("action", "allow")
		return c
	}
	noCSRF := allow(vals)
	noCSRF.Del("csrf_token")
	wrong := allow(vals)
	wrong.Set("csrf_token", "oauthd_x_"+strings.Repeat("A", 43))
	bobVals, _ := consentForm(t, bb, page)

	for _, tc := range []struct {
		name string
		b    *consenttest.Browser
		v    url.Values
	}{
		{"no CSRF token", ba, noCSRF},
		{"wrong CSRF token", ba, wrong},
		{"alice's form with bob's session cookie", bb, allow(vals)},
		{"bob's CSRF token in alice's session", ba, allow(bobVals)},
		{"no session at all", consenttest.New(), allow(vals)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, loc := post(tc.b, tc.v)
			if status >= 500 {
				t.Fatalf("= %d", status)
			}
			if strings.Contains(loc, "code=") || strings.HasPrefix(loc, testRedirectURI) {
				t.Errorf("= %d to %s; nothing may be granted", status, loc)
			}
			if status != http.StatusForbidden && !(status == http.StatusSeeOther && strings.Contains(loc, "/auth/login")) {
				t.Errorf("= %d %s; want 403 (or to the login page without a session)", status, loc)
			}
		})
	}
	if after := storedState(t, db, evil.ID); after != before {
		t.Errorf("stored data changed:\nbefore %s\nafter  %s", before, after)
	}
	// With the right token, alice's own decision goes through.
	if status, loc := post(ba, allow(vals)); status != http.StatusSeeOther || !strings.Contains(loc, "code=") {
		t.Errorf("alice's own Allow = %d %s; want a code", status, loc)
	}
}

// TestAttacksBruteForce: client-secret and login brute force are limited
// per client/user and per source address with 429 and Retry-After; the
// limit expires by itself (Retry-After is bounded); nothing stored changes.
func TestAttacksBruteForce(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db)
	cl := newTestClient(t, db, "target")
	first := initialTokens(t, s.base, cl, 1)[0]
	before := storedState(t, db, cl.ID)

	t.Run("client secret", func(t *testing.T) {
		wrong := cl
		var got429 int
		var retry string
		for i := range 30 {
			wrong.Secret = fmt.Sprintf("oauthd_cs_guess%03d", i)
			r, err := refresh(t.Context(), http.DefaultClient, s.base, wrong, first.RefreshToken, nil)
			if err != nil {
				t.Fatal(err)
			}
			switch r.Status {
			case http.StatusUnauthorized:
				if got429 > 0 {
					t.Errorf("guess %d = 401 after a 429; the limit must hold", i)
				}
			case http.StatusTooManyRequests:
				got429++
				retry = r.Header.Get("Retry-After")
			default:
				t.Fatalf("guess %d = %d %s; want 401 or 429", i, r.Status, r.Body)
			}
		}
		if got429 < 15 {
			t.Errorf("%d of 30 guesses were limited; want the limit after at most 15", got429)
		}
		if n, err := strconv.Atoi(retry); err != nil || n < 1 || n > 600 {
			t.Errorf("Retry-After = %q; want 1..600 seconds (the limit expires)", retry)
		}
		// From the same address, the real secret is limited too (else the
		// limit would be an oracle) — until the bucket refills.
		r, _ := refresh(t.Context(), http.DefaultClient, s.base, cl, first.RefreshToken, nil)
		if r.Status != http.StatusTooManyRequests {
			t.Errorf("the real secret during the limit = %d %s; want 429", r.Status, r.Body)
		}
	})

	t.Run("login", func(t *testing.T) {
		b := consenttest.New()
		_, challenge := consenttest.PKCE()
		u := authorizeURL(s.base, cl, "st", challenge)
		var last *consenttest.PageError
		for i := range 10 {
			_, err := b.Authorize(t.Context(), u, cl.Login, fmt.Sprintf("wrong password %d", i), true)
			pe, ok := err.(*consenttest.PageError)
			if !ok {
				t.Fatalf("login attempt %d: %v; want the login page again", i, err)
			}
			if pe.StatusCode >= 500 {
				t.Fatalf("login attempt %d = %d", i, pe.StatusCode)
			}
			last = pe
		}
		if last.StatusCode != http.StatusTooManyRequests {
			t.Errorf("10th wrong password = %d; want 429", last.StatusCode)
		}
		// The real password is throttled as well for now; the page says
		// how long, and the limit lapses by itself (consent's
		// TestLimiterExpires).
		_, err := b.Authorize(t.Context(), u, cl.Login, testPassword, true)
		if pe, ok := err.(*consenttest.PageError); !ok || pe.StatusCode != http.StatusTooManyRequests {
			t.Errorf("the right password during the limit: %v; want 429", err)
		}
	})
	if after := storedState(t, db, cl.ID); after != before {
		t.Errorf("stored data changed:\nbefore %s\nafter  %s", before, after)
	}
}

// runServeOnce runs serve when it is expected to fail at startup.
func runServeOnce(t *testing.T, db string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, oauthdBin, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db}, args...)...)
	cmd.Env = cleanEnv()
	var errb strings.Builder
	cmd.Stderr = &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("serve %v did not exit: it should have refused to start\n%s", args, errb.String())
	}
	return errb.String(), err
}

// TestServeMasterKey is issue 5 item 5 on the real binary: serve warns
// loudly without a master key; with keys sealed under one, a wrong or
// missing key fails with a clear message, exit 1, and changes nothing.
func TestServeMasterKey(t *testing.T) {
	dir := t.TempDir()
	key1, key2 := filepath.Join(dir, "k1"), filepath.Join(dir, "k2")
	os.WriteFile(key1, []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
	os.WriteFile(key2, []byte(strings.Repeat("cd", 32)+"\n"), 0o600)

	plain := filepath.Join(dir, "plain.db")
	s, logs := startServeLogged(t, plain)
	if got := logs.grep("level=WARN", "NO MASTER KEY"); len(got) == 0 {
		t.Errorf("serve without a master key did not warn:\n%s", logs.text())
	}
	stopServe(t, s)

	db := filepath.Join(dir, "sealed.db")
	s, logs = startServeLogged(t, db, "--master-key-file", key1)
	if got := logs.grep("NO MASTER KEY"); len(got) != 0 {
		t.Errorf("serve with a master key warned: %q", got)
	}
	stopServe(t, s)
	keysBefore := mustOauthd(t, db, "", "keys", "list", "--json", "--master-key-file", key1)

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"wrong master key", []string{"--master-key-file", key2}, "the master key does not open the signing keys"},
		{"no master key", nil, "signing keys are encrypted; set OAUTHD_MASTER_KEY or --master-key-file"},
		{"malformed master key", []string{"--master-key-file", filepath.Join(dir, "plain.db")}, "is not usable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr, err := runServeOnce(t, db, tc.args...)
			var ee *exec.ExitError
			if !asExit(err, &ee) || ee.ExitCode() != 1 {
				t.Errorf("serve = %v; want exit status 1\n%s", err, stderr)
			}
			if !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "panic") || strings.Contains(stderr, "listening on") {
				t.Errorf("stderr %q; want %q, no panic, never listening", stderr, tc.want)
			}
			if _, err := os.Stat(db + ".sock"); !os.IsNotExist(err) {
				t.Errorf("admin socket left behind: %v", err)
			}
		})
	}
	if after := mustOauthd(t, db, "", "keys", "list", "--json", "--master-key-file", key1); after != keysBefore {
		t.Errorf("keys changed by the failed starts:\nbefore %s\nafter  %s", keysBefore, after)
	}
	// The right key still opens them.
	s = startServe(t, db, "--master-key-file", key1)
	stopServe(t, s)
}

func asExit(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}

// TestAuditLog is issue 5 item 6 on the real binary: every security event
// is one log record with the client, the user and the source address where
// they exist, and nothing the server handed out or was told in confidence
// (secrets, tokens, codes, passwords, session and CSRF cookies) appears in
// the log. serve has no JSON log format: the records are slog's text
// format (key=value) on stderr.
func TestAuditLog(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s, logs := startServeLogged(t, db, "--log-level", "debug")
	ctx := t.Context()
	cl := newTestClient(t, db, "audited") // client_created, client_approved
	var secrets []string                  // everything that must never be logged
	secrets = append(secrets, cl.Secret, testPassword)

	// A second client, to deny and to reject.
	var other struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	oneJSON(t, mustOauthd(t, db, "", "clients", "create", "--owner", "audited@example.com", "--name", "Other",
		"--redirect-uri", testRedirectURI, "--scope", "PROFILE_READ,BOOKING_READ", "--json"), &other)
	secrets = append(secrets, other.ClientSecret)
	mustOauthd(t, db, "", "clients", "approve", other.ClientID)
	otherCl := testClient{ID: other.ClientID, Secret: other.ClientSecret, Login: cl.Login}

	// Login failure, then the flow: login success and consent.
	b := consenttest.New()
	verifier, challenge := consenttest.PKCE()
	if _, err := b.Authorize(ctx, authorizeURL(s.base, cl, "st", challenge), cl.Login, "not the password", true); err == nil {
		t.Fatal("a wrong password was accepted")
	}
	u, err := b.Authorize(ctx, authorizeURL(s.base, cl, "st", challenge), cl.Login, testPassword, true)
	if err != nil {
		t.Fatal(err)
	}
	code := u.Query().Get("code")
	secrets = append(secrets, code, verifier)
	tok, err := exchangeCode(ctx, http.DefaultClient, s.base, cl, code, verifier)
	if err != nil || tok.Status != 200 {
		t.Fatalf("exchange: %+v %v", tok, err)
	}
	secrets = append(secrets, tok.AccessToken, tok.RefreshToken)
	base, _ := url.Parse(s.base)
	for _, c := range b.Client.Jar.Cookies(base) {
		secrets = append(secrets, c.Value)
	}
	// Deny for the other client.
	_, ch2 := consenttest.PKCE()
	if u, err := b.Authorize(ctx, authorizeURL(s.base, otherCl, "st", ch2), cl.Login, testPassword, false); err != nil || u.Query().Get("error") != "access_denied" {
		t.Fatalf("deny: %v %v", u, err)
	}
	// Two rotations, then reuse of the first rotated token (two rotations
	// back: the reuse grace accepts only the immediately previous one).
	r1, _ := refresh(ctx, http.DefaultClient, s.base, cl, tok.RefreshToken, nil)
	secrets = append(secrets, r1.AccessToken, r1.RefreshToken)
	r2, _ := refresh(ctx, http.DefaultClient, s.base, cl, r1.RefreshToken, nil)
	secrets = append(secrets, r2.AccessToken, r2.RefreshToken)
	if r, _ := refresh(ctx, http.DefaultClient, s.base, cl, tok.RefreshToken, nil); r.Error != "invalid_grant" {
		t.Fatalf("reuse = %+v", r)
	}
	// A wrong client secret.
	bad := cl
	bad.Secret = "oauthd_cs_wrong-guess"
	refresh(ctx, http.DefaultClient, s.base, bad, r1.RefreshToken, nil)
	// Operator events.
	var gen struct {
		SecretID     string `json:"secret_id"`
		ClientSecret string `json:"client_secret"`
	}
	oneJSON(t, mustOauthd(t, db, "", "clients", "secrets", "generate", cl.ID, "--json"), &gen)
	secrets = append(secrets, gen.ClientSecret)
	mustOauthd(t, db, "", "clients", "secrets", "revoke", cl.ID, gen.SecretID)
	mustOauthd(t, db, "", "clients", "reject", other.ClientID, "--reason", "audit test")
	oldActive := kidIn(keyStates(t, db), "active")
	mustOauthd(t, db, "", "keys", "rotate")
	mustOauthd(t, db, "", "keys", "revoke", "--", oldActive)
	// Let the last records reach the pipe.
	stopServe(t, s)

	ip := "remote_addr=127.0.0.1"
	uid := "user_id=1"
	cid := "client_id=" + cl.ID
	for _, ev := range []struct {
		event string
		attrs []string
	}{
		{"login_failed", []string{uid, ip}},
		{"login_succeeded", []string{uid, ip}},
		{"consent_given", []string{uid, cid, ip}},
		{"consent_granted", []string{uid, cid}},
		{"consent_denied", []string{uid, "client_id=" + other.ClientID, ip}},
		{"refresh_token_reuse", []string{uid, cid, ip}},
		{"client_auth_failed", []string{cid, ip}},
		{"client_approved", []string{cid}},
		{"client_rejected", []string{"client_id=" + other.ClientID}},
		{"secret_generated", []string{cid, "secret_id=" + gen.SecretID}},
		{"secret_revoked", []string{cid, "secret_id=" + gen.SecretID}},
		{"key_rotated", nil},
		{"key_revoked", []string{"kid=" + oldActive}},
	} {
		if got := logs.grep(append([]string{"msg=audit", "event=" + ev.event + " "}, ev.attrs...)...); len(got) == 0 {
			t.Errorf("no audit record %s with %v; records of that event: %q", ev.event, ev.attrs, logs.grep("event="+ev.event+" "))
		}
	}
	text := logs.text()
	for _, sec := range secrets {
		if sec == "" {
			continue
		}
		if strings.Contains(text, sec) {
			t.Errorf("the log contains a secret value (%.12s…)", sec)
		}
		// Also the parts: the random half of a refresh token.
		if _, rest, ok := strings.Cut(sec, "."); ok && len(rest) >= 20 && strings.Contains(text, rest) {
			t.Errorf("the log contains part of a secret value (%.12s…)", rest)
		}
	}
}
