package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
)

// corsDo sends method u with the headers and returns the response (body closed).
func corsDo(t *testing.T, method, u string, hdr map[string]string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestCORSHeaders checks the CORS rules header by header on the real
// server: preflights of the token and revocation endpoints answer the
// origins of approved public clients' redirect URIs only; an actual
// request gets Access-Control-Allow-Origin only for an origin of the
// authenticated client itself; confidential clients get none; the public
// documents allow every origin; the pages never answer CORS; credentials
// are never allowed.
func TestCORSHeaders(t *testing.T) {
	e := startE2E(t)
	const spa = "http://127.0.0.1:5173"
	const other = "http://127.0.0.1:5174"
	const conf = "https://confidential.example"
	pubID, _ := e.client(t, spa+"/callback", []string{"PROFILE_READ"}, "--public")
	otherID, _ := e.client(t, other+"/callback", []string{"PROFILE_READ"}, "--public")
	confID, confSecret := e.client(t, conf+"/callback", []string{"PROFILE_READ"})
	_ = otherID
	// A public client still under review opens nothing.
	const unreviewed = "http://127.0.0.1:5175"
	pendingID, _ := e.client(t, unreviewed+"/callback", []string{"PROFILE_READ"}, "--public", "--pending")

	pre := func(path, origin string) *http.Response {
		return corsDo(t, http.MethodOptions, e.base+path, map[string]string{
			"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type",
		}, "")
	}
	for _, path := range []string{"/v2/auth/oauth2/token", "/v2/auth/oauth2/revoke", "/v2/auth/oauth2/par"} {
		for _, tc := range []struct {
			origin string
			allow  bool
		}{{spa, true}, {other, true}, {conf, false}, {unreviewed, false}, {"http://evil.example", false}, {"null", false},
			{spa + "/", false}, {"http://localhost:5173", false}} {
			r := pre(path, tc.origin)
			got := r.Header.Get("Access-Control-Allow-Origin")
			if r.StatusCode != http.StatusNoContent || (tc.allow && got != tc.origin) || (!tc.allow && got != "") {
				t.Errorf("preflight %s from %s = %d, Allow-Origin %q; want 204 and %v", path, tc.origin, r.StatusCode, got, tc.allow)
			}
			if r.Header.Get("Access-Control-Allow-Credentials") != "" || !strings.Contains(strings.Join(r.Header.Values("Vary"), ","), "Origin") {
				t.Errorf("preflight %s from %s: headers %v; want Vary: Origin and no Allow-Credentials", path, tc.origin, r.Header)
			}
			if tc.allow && r.Header.Get("Access-Control-Allow-Methods") != "POST" {
				t.Errorf("preflight %s: Allow-Methods %q", path, r.Header.Get("Access-Control-Allow-Methods"))
			}
		}
	}

	// Actual requests: the origin must be the authenticated client's own.
	form := func(v url.Values) string { return v.Encode() }
	post := func(origin string, body string, basic ...string) *http.Response {
		hdr := map[string]string{"Origin": origin, "Content-Type": "application/x-www-form-urlencoded"}
		req, _ := http.NewRequest(http.MethodPost, e.base+"/v2/auth/oauth2/revoke", strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		if len(basic) == 2 {
			req.SetBasicAuth(basic[0], basic[1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, tc := range []struct {
		name, origin, body string
		basic              []string
		want               string
	}{
		{"own origin", spa, form(url.Values{"client_id": {pubID}, "token": {"x"}}), nil, spa},
		{"another public client's origin", other, form(url.Values{"client_id": {pubID}, "token": {"x"}}), nil, ""},
		{"foreign origin", "http://evil.example", form(url.Values{"client_id": {pubID}, "token": {"x"}}), nil, ""},
		{"confidential client from its redirect origin", conf, form(url.Values{"token": {"x"}}), []string{confID, confSecret}, ""},
		{"unauthenticated", spa, form(url.Values{"client_id": {"nope"}, "token": {"x"}}), nil, ""},
		{"client under review", unreviewed, form(url.Values{"client_id": {pendingID}, "token": {"x"}}), nil, ""},
	} {
		r := post(tc.origin, tc.body, tc.basic...)
		if got := r.Header.Get("Access-Control-Allow-Origin"); got != tc.want {
			t.Errorf("revoke, %s: status %d, Allow-Origin %q; want %q", tc.name, r.StatusCode, got, tc.want)
		}
		if !strings.Contains(strings.Join(r.Header.Values("Vary"), ","), "Origin") || r.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("revoke, %s: headers %v; want Vary: Origin, no Allow-Credentials", tc.name, r.Header)
		}
	}

	// Public documents: any origin, no credentials.
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/jwks.json", "/.well-known/revoked-grants"} {
		r := corsDo(t, http.MethodGet, e.base+path, map[string]string{"Origin": "http://evil.example"}, "")
		if r.StatusCode != 200 || r.Header.Get("Access-Control-Allow-Origin") != "*" || r.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("GET %s = %d, headers %v; want 200 with Allow-Origin *", path, r.StatusCode, r.Header)
		}
	}
	// Never on the pages, nor introspection, whatever the origin.
	for _, path := range []string{"/auth/oauth2/authorize?client_id=" + pubID, "/auth/login", "/settings/clients", "/v2/auth/oauth2/introspect", "/v2/me"} {
		for _, m := range []string{http.MethodOptions, http.MethodGet, http.MethodPost} {
			r := corsDo(t, m, e.base+path, map[string]string{"Origin": spa, "Access-Control-Request-Method": "POST"}, "")
			for k := range r.Header {
				if strings.HasPrefix(strings.ToLower(k), "access-control-") {
					t.Errorf("%s %s from %s: %s: %q; want no CORS header", m, path, spa, k, r.Header.Get(k))
				}
			}
		}
	}
}

// corsPage serves /app, an empty page on its own origin, and /callback.
func corsPage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>single-page app</title><p id="app">app</p>`)
	})
}

// TestBrowserCORS is the issue "Beyond the peers" item 1 check in a real
// browser: a page served on another loopback origin (a single-page app,
// registered as a public client with its redirect URI there) runs the
// PKCE code exchange with fetch (JSON, so with a preflight), refreshes,
// reads the metadata and the JWKS, and revokes; a page on a foreign origin
// is refused by the browser before its request reaches the token endpoint
// (the same code is then still unused).
func TestBrowserCORS(t *testing.T) {
	bctx := consenttest.Chrome(t, 800, 600)
	app := httptest.NewServer(corsPage())
	t.Cleanup(app.Close)
	// A foreign origin: same page, another port, registered by no client.
	foreign := httptest.NewServer(corsPage())
	t.Cleanup(foreign.Close)

	e := startE2E(t)
	redirectURI := app.URL + "/callback"
	id, _ := e.client(t, redirectURI, []string{"PROFILE_READ"}, "--public")
	conf := e.config(id, "", redirectURI, oauth2.AuthStyleInParams, "PROFILE_READ")
	verifier := oauth2.GenerateVerifier()
	code := e.codeFlow(t, context.Background(), consenttest.New(), conf, oauth2.S256ChallengeOption(verifier))

	exchange := fmt.Sprintf(`(async () => {
  try {
    const r = await fetch(%q, {method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({grant_type: "authorization_code", code: %q, redirect_uri: %q, client_id: %q, code_verifier: %q})});
    return {ok: true, status: r.status, body: await r.json()};
  } catch (err) {
    return {ok: false, error: String(err)};
  }
})()`, e.base+"/v2/auth/oauth2/token", code, redirectURI, id, verifier)
	type result struct {
		OK     bool           `json:"ok"`
		Status int            `json:"status"`
		Body   map[string]any `json:"body"`
		Error  string         `json:"error"`
	}
	run := func(name, js string) result {
		t.Helper()
		var res result
		sctx, cancel := context.WithTimeout(bctx, consenttest.StepTimeout)
		defer cancel()
		v, err := chromedp.Run(sctx, chromedp.Evaluate[json.RawMessage](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := json.Unmarshal(v, &res); err != nil {
			t.Fatalf("%s: %s: %v", name, v, err)
		}
		return res
	}

	// 1. The foreign origin: the preflight is refused, fetch fails, and
	// the request never reaches the endpoint.
	consenttest.Step(t, bctx, "open the foreign page", chromedp.Navigate(strings.Replace(foreign.URL, "127.0.0.1", "localhost", 1)+"/app"),
		chromedp.WaitVisible(chromedp.CSS("#app")))
	if res := run("exchange from the foreign origin", exchange); res.OK {
		t.Fatalf("fetch from a foreign origin = %+v; want a CORS failure", res)
	} else {
		t.Logf("foreign origin refused by the browser: %s", res.Error)
	}

	// 2. The app's own origin: exchange, refresh, metadata, JWKS, revoke.
	consenttest.Step(t, bctx, "open the app", chromedp.Navigate(app.URL+"/app"), chromedp.WaitVisible(chromedp.CSS("#app")))
	res := run("exchange from the app", exchange)
	if !res.OK || res.Status != 200 {
		t.Fatalf("fetch code exchange from the app's origin = %+v; want 200 (the code unused by the refused attempt)", res)
	}
	at, _ := res.Body["access_token"].(string)
	rt, _ := res.Body["refresh_token"].(string)
	if at == "" || rt == "" || res.Body["token_type"] == nil {
		t.Fatalf("token response read by the page = %v", res.Body)
	}
	e.wantMe(t, at)
	refresh := fmt.Sprintf(`(async () => {
  try {
    const r = await fetch(%q, {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"},
      body: new URLSearchParams({grant_type: "refresh_token", refresh_token: %q, client_id: %q})});
    return {ok: true, status: r.status, body: await r.json()};
  } catch (err) { return {ok: false, error: String(err)}; }
})()`, e.base+"/v2/auth/oauth2/token", rt, id)
	res = run("refresh from the app", refresh)
	rt2, _ := res.Body["refresh_token"].(string)
	if !res.OK || res.Status != 200 || rt2 == "" {
		t.Fatalf("fetch refresh from the app = %+v", res)
	}
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/jwks.json"} {
		res = run("GET "+path, fmt.Sprintf(`(async () => {
  try { const r = await fetch(%q); return {ok: true, status: r.status, body: await r.json()}; }
  catch (err) { return {ok: false, error: String(err)}; }
})()`, e.base+path))
		if !res.OK || res.Status != 200 || len(res.Body) == 0 {
			t.Errorf("fetch %s from the app = %+v", path, res)
		}
	}
	res = run("revoke from the app", fmt.Sprintf(`(async () => {
  try {
    const r = await fetch(%q, {method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({token: %q, client_id: %q})});
    return {ok: true, status: r.status, body: {}};
  } catch (err) { return {ok: false, error: String(err)}; }
})()`, e.base+"/v2/auth/oauth2/revoke", rt2, id))
	if !res.OK || res.Status != 200 {
		t.Fatalf("fetch revoke from the app = %+v", res)
	}
	if status, body := e.me(t, at); status != http.StatusUnauthorized {
		t.Errorf("/v2/me after the page revoked the grant = %d %s; want 401", status, body)
	}
}

// TestCORSPushedAuthorizationRequest: a browser client pushes its
// authorization request (RFC 9126) from its own origin, and reads the
// answer; another origin gets no Access-Control-Allow-Origin.
func TestCORSPushedAuthorizationRequest(t *testing.T) {
	e := startE2E(t)
	const spa = "http://127.0.0.1:5173"
	id, _ := e.client(t, spa+"/callback", []string{"PROFILE_READ"}, "--public")
	body := url.Values{"client_id": {id}, "redirect_uri": {spa + "/callback"}, "scope": {"PROFILE_READ"},
		"response_type": {"code"}, "code_challenge": {strings.Repeat("a", 43)}, "code_challenge_method": {"S256"}}.Encode()
	for _, tc := range []struct {
		origin, want string
	}{{spa, spa}, {"http://evil.example", ""}} {
		r := corsDo(t, http.MethodPost, e.base+"/v2/auth/oauth2/par", map[string]string{
			"Origin": tc.origin, "Content-Type": "application/x-www-form-urlencoded"}, body)
		if r.StatusCode != http.StatusCreated || r.Header.Get("Access-Control-Allow-Origin") != tc.want ||
			!strings.Contains(strings.Join(r.Header.Values("Vary"), ","), "Origin") {
			t.Errorf("PAR from %s = %d, headers %v; want 201, Allow-Origin %q", tc.origin, r.StatusCode, r.Header, tc.want)
		}
	}
}
