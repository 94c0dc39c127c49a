package consenttest

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"testing"
)

// SettingsUser is a browser without JavaScript signed in to the settings
// pages (consent/settings) with the built-in login form; the end-to-end
// tests of cmd/oauthd drive a real server with it.
type SettingsUser struct {
	hc   *http.Client
	base string
}

// SignInSettings signs in at base's login form as login and returns the browser;
// it fails the test when the login does not land on the settings pages.
func SignInSettings(t *testing.T, base string, transport http.RoundTripper, login, password string) *SettingsUser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	u := &SettingsUser{hc: &http.Client{Jar: jar, Transport: transport}, base: base}
	status, _, body := u.Do(t, http.MethodGet, "/auth/login?return_to=%2Fsettings%2Fclients", nil)
	if status != http.StatusOK {
		t.Fatalf("GET /auth/login = %d\n%s", status, body)
	}
	status, at, body := u.Do(t, http.MethodPost, "/auth/login", url.Values{"login": {login}, "password": {password},
		"csrf_token": {FormCSRF(t, body)}, "return_to": {"/settings/clients"}})
	if status != http.StatusOK || at.Path != "/settings/clients" {
		t.Fatalf("sign in as %q: %d at %s; want the settings pages\n%s", login, status, at, body)
	}
	return u
}

// do sends a request (a POST when form is not nil), following redirects,
// and returns the last status, URL and body.
func (u *SettingsUser) Do(t *testing.T, method, path string, form url.Values) (int, *url.URL, string) {
	t.Helper()
	var (
		resp *http.Response
		err  error
	)
	if method == http.MethodPost {
		resp, err = u.hc.PostForm(u.base+path, form)
	} else {
		resp, err = u.hc.Get(u.base + path)
	}
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Request.URL, string(b)
}

// client opens the settings page of client id: 200 when the user owns it,
// 404 otherwise.
func (u *SettingsUser) Client(t *testing.T, id string) (int, string) {
	t.Helper()
	status, _, body := u.Do(t, http.MethodGet, "/settings/clients/"+url.PathEscape(id), nil)
	return status, body
}

// list is the settings pages' list of the user's clients.
func (u *SettingsUser) List(t *testing.T) string {
	t.Helper()
	status, _, body := u.Do(t, http.MethodGet, "/settings/clients", nil)
	if status != http.StatusOK {
		t.Fatalf("GET /settings/clients = %d", status)
	}
	return body
}

// generateSecret posts the "generate a secret" form of client id with the
// user's own CSRF token: the status of the answer.
func (u *SettingsUser) GenerateSecret(t *testing.T, id string) int {
	t.Helper()
	status, _, _ := u.Do(t, http.MethodPost, "/settings/clients/"+url.PathEscape(id)+"/secrets",
		url.Values{"csrf_token": {FormCSRF(t, u.List(t))}})
	return status
}

// revokeSecret posts the "revoke" form of client id's secret sid with the
// user's own CSRF token: the status of the answer.
func (u *SettingsUser) RevokeSecret(t *testing.T, id, sid string) int {
	t.Helper()
	status, _, _ := u.Do(t, http.MethodPost, "/settings/clients/"+url.PathEscape(id)+"/secrets/revoke",
		url.Values{"csrf_token": {FormCSRF(t, u.List(t))}, "secret_id": {sid}})
	return status
}
