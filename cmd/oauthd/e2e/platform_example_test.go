package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
)

// lateProxy is a reverse proxy whose upstream is set once it is known: it
// stands for the TLS-terminating proxy in front of oauthd, and gives the
// test public addresses before oauthd has its port.
type lateProxy struct {
	*httptest.Server
	to atomic.Pointer[url.URL]
}

func newLateProxy(t *testing.T) *lateProxy {
	p := &lateProxy{}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(p.to.Load())
		r.SetXForwarded()
	}}
	p.Server = httptest.NewServer(rp)
	t.Cleanup(p.Close)
	return p
}

// TestPlatformExample builds docs/examples/platform, the platform's side of
// the login handover that docs/LOGIN-HANDOVER.md quotes, and runs a whole
// login through it against the real `oauthd serve`, with the app URL on
// another host than the base URL (each behind its own proxy, as in
// docs/PRODUCTION.md): the platform's keys once from its JWKS URL and once
// from the PEM file it writes.
func TestPlatformExample(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "platform")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../docs/examples/platform").CombinedOutput(); err != nil {
		t.Fatalf("build the example: %v\n%s", err, out)
	}
	for _, keySource := range []string{"jwks", "pem"} {
		t.Run(keySource, func(t *testing.T) {
			dir := t.TempDir()
			api, app := newLateProxy(t), newLateProxy(t)
			base := api.URL
			// The pages live on another host name than the API.
			appURL := strings.Replace(app.URL, "127.0.0.1", "localhost", 1)
			key := filepath.Join(dir, "platform-key.pem")
			plat := exec.Command(bin, "-addr", "127.0.0.1:0", "-key", key,
				"-oauthd-base-url", base, "-oauthd-app-url", appURL)
			platURL, _ := startProcess(t, plat, "platform", regexp.MustCompile(`platform listening on (http://[0-9.:]+)`), nil)
			jwks := platURL + "/.well-known/jwks.json"
			if keySource == "pem" {
				jwks = filepath.Join(dir, "platform.pub.pem")
				if out, err := exec.Command(bin, "-key", key, "-write-public-key", jwks).CombinedOutput(); err != nil {
					t.Fatalf("platform -write-public-key: %v\n%s", err, out)
				}
				if b, _ := os.ReadFile(jwks); !strings.Contains(string(b), "BEGIN PUBLIC KEY") || strings.Contains(string(b), "PRIVATE") {
					t.Fatalf("the written public key file:\n%s", b)
				}
			}
			db := filepath.Join(dir, "o.db")
			s := startServe(t, db, "--base-url", base, "--app-url", appURL, "--trusted-proxy", "127.0.0.1/32",
				"--login-url", platURL+"/login", "--login-issuer", platURL, "--login-jwks", jwks)
			to, _ := url.Parse(s.base)
			api.to.Store(to)
			app.to.Store(to)
			mustOauthd(t, db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
				"--name", e2eName, "--password-stdin")
			e := &e2e{server: &server{base: base, db: db}}
			id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
			conf := &oauth2.Config{ClientID: id, ClientSecret: secret, RedirectURL: e2eRedirect, Scopes: []string{"PROFILE_READ"},
				Endpoint: oauth2.Endpoint{AuthURL: appURL + "/auth/oauth2/authorize", TokenURL: base + "/v2/auth/oauth2/token"}}
			verifier := oauth2.GenerateVerifier()
			authURL := conf.AuthCodeURL("st-ex", oauth2.S256ChallengeOption(verifier))

			jar := newJar(t)
			status, at, body := browse(t, jar, http.MethodGet, authURL, nil)
			if status != http.StatusOK || !strings.HasPrefix(at.String(), platURL+"/login?") {
				t.Fatalf("authorize without a session: %d at %s; want the platform's login form\n%s", status, at, body)
			}
			q := at.Query()
			if q.Get("return_to") != appURL+"/auth/login/handover" {
				t.Fatalf("return_to = %q; want the app URL's %q", q.Get("return_to"), appURL+"/auth/login/handover")
			}
			// The example refuses a return_to anywhere else (no open redirect).
			if status, _, _ := browse(t, newJar(t), http.MethodPost, platURL+"/login", url.Values{
				"return_to": {base + "/auth/login/handover"}, "challenge": {q.Get("challenge")},
				"email": {"pat@platform.example"}, "password": {"platform password"}}); status != http.StatusBadRequest {
				t.Fatalf("the example with return_to on the base URL: %d; want 400", status)
			}
			// The user signs in at the platform's form, which hands over.
			status, at, body = browse(t, jar, http.MethodPost, platURL+"/login", url.Values{
				"return_to": {q.Get("return_to")}, "challenge": {q.Get("challenge")},
				"email": {"pat@platform.example"}, "password": {"platform password"}})
			if status != http.StatusOK || at.Host != strings.TrimPrefix(appURL, "http://") || at.Path != "/auth/oauth2/authorize" {
				t.Fatalf("after the platform's login: %d at %s; want oauthd's consent page on the app URL\n%s", status, at, body)
			}
			b := consenttest.New()
			b.Client.Jar = jar
			loc, err := b.Authorize(context.Background(), authURL, "", "", true)
			if err != nil || loc.Query().Get("code") == "" || loc.Query().Get("iss") != base {
				t.Fatalf("consent = %v, %v; want a code and iss %s", loc, err, base)
			}
			tok, err := conf.Exchange(context.Background(), loc.Query().Get("code"), oauth2.VerifierOption(verifier))
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			status, me := e2eGet(t, base+"/v2/me", tok.AccessToken, nil)
			var prof struct {
				Data struct{ Email, Name string } `json:"data"`
			}
			_ = json.Unmarshal([]byte(me), &prof)
			if status != http.StatusOK || prof.Data.Email != "pat@platform.example" || prof.Data.Name != "Pat Doe" {
				t.Fatalf("/v2/me = %d %s; want the platform's user", status, me)
			}
		})
	}
}
