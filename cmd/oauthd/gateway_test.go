package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"oauthd/keys/keystest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
)

// testIssuer serves a JWKS with one ES256 key and signs access tokens.
type testIssuer struct {
	srv  *httptest.Server
	priv *ecdsa.PrivateKey
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := jwk.FromRaw(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	k.Set(jwk.KeyIDKey, "k1")
	k.Set(jwk.AlgorithmKey, jwa.ES256)
	k.Set(jwk.KeyUsageKey, "sig")
	set := jwk.NewSet()
	set.AddKey(k)
	body, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	ti := &testIssuer{priv: priv}
	ti.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/jwks.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		w.Write(body)
	}))
	t.Cleanup(ti.srv.Close)
	return ti
}

func (ti *testIssuer) token(t *testing.T, claims jwt.MapClaims) string {
	t.Helper()
	now := time.Now()
	base := jwt.MapClaims{"iss": ti.srv.URL, "aud": ti.srv.URL, "sub": "42", "client_id": "app",
		"iat": now.Unix(), "exp": now.Add(30 * time.Minute).Unix(), "jti": "j"}
	for k, v := range claims {
		base[k] = v
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, base)
	tok.Header["typ"] = "at+jwt"
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(ti.priv)
	if err != nil {
		t.Fatal(err)
	}
	return keystest.LowS(s)
}

// startGateway runs `oauthd gateway` with args until the test ends and
// returns its base URL.
func startGateway(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	addrc := make(chan net.Addr, 1)
	o := &gatewayOptions{ready: func(a net.Addr) { addrc <- a }}
	cmd := newGatewayCommandWith(o)
	if !slices.Contains(args, "--public-url") {
		args = append(args, "--dpop-trust-host") // the port is not known before it listens
	}
	cmd.SetArgs(append([]string{"--listen", "127.0.0.1:0"}, args...))
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("gateway returned %v after cancel; want nil", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("gateway did not stop after its context was cancelled")
		}
	})
	select {
	case a := <-addrc:
		return "http://" + a.String()
	case err := <-done:
		t.Fatalf("gateway exited: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("gateway did not start")
	}
	return ""
}

func TestGatewayRealVerifier(t *testing.T) {
	ti := newTestIssuer(t)
	type seen struct {
		path   string
		header http.Header
	}
	upc := make(chan seen, 10)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upc <- seen{r.URL.Path, r.Header.Clone()}
		io.WriteString(w, "upstream "+r.URL.Path)
	}))
	defer up.Close()

	routes := filepath.Join(t.TempDir(), "routes.json")
	os.WriteFile(routes, []byte(`[{"method":"GET","path":"/v2/extra/{id}","scopes":["BOOKING_READ"]}]`), 0o600)
	gw := startGateway(t, "--upstream", up.URL, "--issuer", ti.srv.URL, "--routes", routes)

	profile := ti.token(t, jwt.MapClaims{"scope": "PROFILE_READ BOOKING_READ"})
	legacy := ti.token(t, jwt.MapClaims{"unrestricted": true, "client_id": "legacy"})
	expired := ti.token(t, jwt.MapClaims{"scope": "PROFILE_READ", "exp": time.Now().Add(-time.Hour).Unix()})
	otherAud := ti.token(t, jwt.MapClaims{"scope": "PROFILE_READ", "aud": "https://elsewhere"})

	for _, tc := range []struct {
		name, method, path, token string
		status                    int
		upstream                  bool
		www                       string
	}{
		{"healthz", "GET", "/healthz", "", 200, false, ""},
		{"scope covers", "GET", "/v2/me", profile, 200, true, ""},
		{"operator route", "GET", "/v2/extra/9", profile, 200, true, ""},
		{"scope missing", "GET", "/v2/teams", profile, 403, false, `Bearer error="insufficient_scope", scope="TEAM_PROFILE_READ"`},
		{"not in table", "GET", "/v2/unknown", profile, 403, false, `Bearer error="insufficient_scope", error_description="this route is not available to third-party tokens"`},
		{"unrestricted not in table", "GET", "/v2/unknown", legacy, 200, true, ""},
		{"no token", "GET", "/v2/me", "", 401, false, `Bearer`},
		{"expired", "GET", "/v2/me", expired, 401, false, ""},
		{"wrong audience", "GET", "/v2/me", otherAud, 401, false, ""},
		{"public", "GET", "/v2/slots", "", 200, true, ""},
		{"traversal", "GET", "/v2/slots/../me", "", 400, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, gw+tc.path, nil)
			req.Header.Set("X-Oauthd-User-Id", "1")
			req.Header.Set("X-Oauthd-Unrestricted", "true")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d (%s); want %d", resp.StatusCode, body, tc.status)
			}
			if www := resp.Header.Get("WWW-Authenticate"); tc.status == 401 && tc.www == "" && !strings.HasPrefix(www, `Bearer error="invalid_token"`) || tc.www != "" && www != tc.www {
				t.Errorf("WWW-Authenticate %q; want %q", www, tc.www)
			}
			var s seen
			select {
			case s = <-upc:
				if !tc.upstream {
					t.Fatalf("upstream reached at %s", s.path)
				}
			default:
				if tc.upstream {
					t.Fatal("upstream not reached")
				}
				return
			}
			wantUser, wantUnres := "42", ""
			switch tc.token {
			case "":
				wantUser = ""
			case legacy:
				wantUnres = "true"
			}
			if got := s.header.Get("X-Oauthd-User-Id"); got != wantUser {
				t.Errorf("upstream X-Oauthd-User-Id %q; want %q", got, wantUser)
			}
			if got := s.header.Get("X-Oauthd-Unrestricted"); got != wantUnres {
				t.Errorf("upstream X-Oauthd-Unrestricted %q; want %q", got, wantUnres)
			}
			if tc.token == profile && s.header.Get("X-Oauthd-Scopes") != "PROFILE_READ BOOKING_READ" {
				t.Errorf("upstream X-Oauthd-Scopes %q", s.header.Get("X-Oauthd-Scopes"))
			}
		})
	}
}

func TestGatewayTokenCacheEnv(t *testing.T) {
	t.Setenv("OAUTHD_GATEWAY_TOKEN_CACHE", "lots")
	cmd := newGatewayCommand()
	cmd.SetArgs([]string{"--listen", "127.0.0.1:0", "--upstream", "http://u", "--issuer", "http://i"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.ExecuteContext(t.Context()); err == nil || !strings.Contains(err.Error(), "OAUTHD_GATEWAY_TOKEN_CACHE") {
		t.Errorf("error %v; want one naming OAUTHD_GATEWAY_TOKEN_CACHE", err)
	}
}

func TestGatewayFlagErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`[{"method":"GET","path":"/v2/x","scopes":["NOPE"]}]`), 0o600)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no upstream", []string{"--issuer", "http://i"}, "--upstream is required"},
		{"relative upstream", []string{"--upstream", "localhost:3000", "--issuer", "http://i"}, "absolute http or https URL"},
		{"no issuer", []string{"--upstream", "http://u"}, "--issuer is required"},
		{"bad jwks url", []string{"--upstream", "http://u", "--issuer", "http://i", "--jwks-url", "jwks.json"}, "--jwks-url"},
		{"bad routes", []string{"--upstream", "http://u", "--issuer", "http://i", "--routes", bad}, `unknown scope "NOPE"`},
		{"missing routes", []string{"--upstream", "http://u", "--issuer", "http://i", "--routes", bad + ".missing"}, "no such file"},
		{"extra arg", []string{"--upstream", "http://u", "--issuer", "http://i", "x"}, "unknown command"},
		{"bad public url", []string{"--upstream", "http://u", "--issuer", "http://i", "--public-url", "api.example.com"}, "--public-url"},
		{"public url with a path", []string{"--upstream", "http://u", "--issuer", "http://i", "--public-url", "https://api.example.com/v2"}, "--public-url"},
		{"negative token cache", []string{"--upstream", "http://u", "--issuer", "http://i", "--token-cache", "-1"}, "--token-cache -1"},
		// DPoP's htu comes from --public-url, or from Host only by opt-in.
		{"no public url", []string{"--upstream", "http://u", "--issuer", "http://i"}, "--public-url is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newGatewayCommand()
			args := tc.args
			if tc.name != "no public url" {
				args = append(args, "--dpop-trust-host")
			}
			cmd.SetArgs(append([]string{"--listen", "127.0.0.1:0"}, args...))
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.ExecuteContext(t.Context())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want one containing %q", err, tc.want)
			}
		})
	}
}
