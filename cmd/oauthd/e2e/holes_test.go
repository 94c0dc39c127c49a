package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"oauthd/issuer"
)

// The smaller holes of "Decisions that hold", item 7, on the real binary.

// TestBasicRealmOnInvalidClient: a 401 invalid_client answering HTTP Basic
// credentials carries WWW-Authenticate: Basic realm=… (RFC 6749 §5.2) at
// the token, revocation and introspection endpoints.
func TestBasicRealmOnInvalidClient(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db)
	cl := newTestClient(t, db, "realm")
	hc := fromAddr("127.0.0.4", 2)
	for _, ep := range []struct{ path, body string }{
		{"/v2/auth/oauth2/token", "grant_type=refresh_token&refresh_token=oauthd_rt_x"},
		{"/v2/auth/oauth2/revoke", "token=oauthd_rt_x"},
		{"/v2/auth/oauth2/introspect", "token=oauthd_rt_x"},
	} {
		for _, basic := range []bool{true, false} {
			req, _ := http.NewRequest(http.MethodPost, s.base+ep.path, strings.NewReader(ep.body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if basic {
				req.SetBasicAuth(url.QueryEscape(cl.ID), "wrong")
			} else {
				req.Body = io.NopCloser(strings.NewReader(ep.body + "&client_id=" + url.QueryEscape(cl.ID) + "&client_secret=wrong"))
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body struct {
				Error string `json:"error"`
			}
			json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			wa := resp.Header.Get("WWW-Authenticate")
			if resp.StatusCode != http.StatusUnauthorized || body.Error != "invalid_client" {
				t.Errorf("%s basic=%v: %d %q; want 401 invalid_client", ep.path, basic, resp.StatusCode, body.Error)
			}
			if basic && wa != `Basic realm="oauthd"` {
				t.Errorf("%s with HTTP Basic: WWW-Authenticate = %q; want Basic realm=\"oauthd\"", ep.path, wa)
			}
			if !basic && wa != "" {
				t.Errorf("%s with body credentials: WWW-Authenticate = %q; want none", ep.path, wa)
			}
		}
	}
}

// setCookies returns the response's cookies by name.
func setCookies(resp *http.Response) map[string]*http.Cookie {
	m := map[string]*http.Cookie{}
	for _, c := range resp.Cookies() {
		m[c.Name] = c
	}
	return m
}

// TestHostCookiesAndHSTS: with https URLs the cookies are __Host-
// cookies (Secure, Path=/, no Domain) and every response carries
// Strict-Transport-Security; with http URLs neither.
func TestHostCookiesAndHSTS(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		prefix     string
		hsts, path string
	}{
		{"https", []string{"--base-url", "https://auth.example", "--app-url", "https://auth.example"}, "__Host-", issuer.HSTSValue, "/"},
		{"http", nil, "", "", "/auth/login"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "o.db")
			s := startServe(t, db, tc.args...)
			newTestClient(t, db, "cookie")
			hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := hc.Get(s.base + "/auth/login")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			csrf := setCookies(resp)[tc.prefix+"oauthd_csrf"]
			if csrf == nil {
				t.Fatalf("GET /auth/login set %v; want %soauthd_csrf", resp.Header.Values("Set-Cookie"), tc.prefix)
			}
			if csrf.Secure != (tc.prefix != "") || csrf.Path != tc.path || csrf.Domain != "" {
				t.Errorf("CSRF cookie Secure %v Path %q Domain %q; want Secure %v, Path %s, no Domain", csrf.Secure, csrf.Path, csrf.Domain, tc.prefix != "", tc.path)
			}
			m := csrfFieldRE.FindSubmatch(body)
			if m == nil {
				t.Fatal("no CSRF field")
			}
			form := url.Values{"login": {"cookie"}, "password": {testPassword}, "csrf_token": {string(m[1])}}
			req, _ := http.NewRequest(http.MethodPost, s.base+"/auth/login", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.AddCookie(csrf)
			resp, err = hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			sess := setCookies(resp)[tc.prefix+"oauthd_session"]
			if resp.StatusCode != http.StatusOK || sess == nil {
				t.Fatalf("login = %d, cookies %v; want 200 and %soauthd_session", resp.StatusCode, resp.Header.Values("Set-Cookie"), tc.prefix)
			}
			if sess.Secure != (tc.prefix != "") || sess.Path != "/" || sess.Domain != "" || !sess.HttpOnly {
				t.Errorf("session cookie %+v; want HttpOnly, Path=/, no Domain, Secure %v", sess, tc.prefix != "")
			}
			if got := resp.Header.Get("Strict-Transport-Security"); got != tc.hsts {
				t.Errorf("login: Strict-Transport-Security = %q; want %q", got, tc.hsts)
			}
			for _, p := range []string{"/.well-known/jwks.json", "/healthz", "/v2/me", "/nowhere"} {
				resp, err := hc.Get(s.base + p)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if got := resp.Header.Get("Strict-Transport-Security"); got != tc.hsts {
					t.Errorf("GET %s (%d): Strict-Transport-Security = %q; want %q", p, resp.StatusCode, got, tc.hsts)
				}
			}
		})
	}
}

// TestRevocationAuthMethodNone: public clients may revoke with client_id
// alone, and the metadata says so.
func TestRevocationAuthMethodNone(t *testing.T) {
	e := startE2E(t)
	pub, _ := e.client(t, e2eRedirect, []string{"PROFILE_READ"}, "--public")
	var md struct {
		Revocation []string `json:"revocation_endpoint_auth_methods_supported"`
	}
	_, body := e2eGet(t, e.base+"/.well-known/oauth-authorization-server", "", nil)
	if err := json.Unmarshal([]byte(body), &md); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(md.Revocation, "none") {
		t.Errorf("revocation_endpoint_auth_methods_supported = %v; want none among them", md.Revocation)
	}
	resp, err := http.PostForm(e.base+"/v2/auth/oauth2/revoke", url.Values{"token": {"oauthd_rt_x"}, "client_id": {pub}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("revoke by a public client with client_id alone = %d; want 200", resp.StatusCode)
	}
}

// TestHEADWhereGET: HEAD answers like GET, without a body, on every kind
// of GET route: API documents, health, metrics, pages, redirects, the
// bearer-protected /v2/me.
func TestHEADWhereGET(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db)
	cl := newTestClient(t, db, "head")
	tok := initialTokens(t, s.base, cl, 1)[0].AccessToken
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		path, token string
		want        int
	}{
		{"/.well-known/jwks.json", "", http.StatusOK},
		{"/.well-known/oauth-authorization-server", "", http.StatusOK},
		{"/healthz", "", http.StatusOK},
		{"/readyz", "", http.StatusOK},
		{"/metrics", "", http.StatusOK},
		{"/auth/login", "", http.StatusOK},
		{"/auth/oauth2/authorize?" + url.Values{"client_id": {cl.ID}, "redirect_uri": {testRedirectURI}, "scope": {testScopes}}.Encode(), "", http.StatusSeeOther},
		{"/settings/clients", "", http.StatusSeeOther},
		{"/v2/me", tok, http.StatusOK},
		{"/v2/me", "", http.StatusUnauthorized},
		{"/nowhere", "", http.StatusNotFound},
	} {
		var got [2]*http.Response
		for i, m := range []string{http.MethodGet, http.MethodHead} {
			req, _ := http.NewRequest(m, s.base+tc.path, nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if m == http.MethodHead && len(b) != 0 {
				t.Errorf("HEAD %s sent a body of %d bytes", tc.path, len(b))
			}
			got[i] = resp
		}
		g, h := got[0], got[1]
		if g.StatusCode != tc.want || h.StatusCode != g.StatusCode {
			t.Errorf("%s: GET %d, HEAD %d; want both %d", tc.path, g.StatusCode, h.StatusCode, tc.want)
		}
		for _, k := range []string{"Content-Type", "Cache-Control", "Location", "WWW-Authenticate"} {
			if g.Header.Get(k) != h.Header.Get(k) {
				t.Errorf("%s: %s GET %q, HEAD %q", tc.path, k, g.Header.Get(k), h.Header.Get(k))
			}
		}
	}
}
