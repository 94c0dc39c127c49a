package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
)

// upstreamStub is the API server behind the gateway: it answers 200 to
// everything and records what reached it.
type upstreamStub struct {
	mu   sync.Mutex
	seen []upstreamRequest
}

type upstreamRequest struct {
	Method, Path string
	Header       http.Header
}

func (u *upstreamStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	u.mu.Lock()
	u.seen = append(u.seen, upstreamRequest{r.Method, r.URL.Path, r.Header.Clone()})
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"status":"success","upstream":true}`)
}

// take returns and forgets what reached the upstream.
func (u *upstreamStub) take() []upstreamRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.seen
	u.seen = nil
	return s
}

var gatewayListenRE = regexp.MustCompile(`msg="gateway listening".* addr=([0-9.]+:[0-9]+)`)

// startGatewayProcess runs the real binary's `gateway` on a free port in
// front of upstream and waits for its /healthz.
func startGatewayProcess(t *testing.T, upstream, issuer string) string {
	t.Helper()
	cmd := exec.Command(oauthdBin, "gateway", "--listen", "127.0.0.1:0", "--upstream", upstream, "--issuer", issuer, "--dpop-trust-host")
	addr, _ := startProcess(t, cmd, "gateway", gatewayListenRE, nil)
	base := "http://" + addr
	if status, body := e2eGet(t, base+"/healthz", "", nil); status != http.StatusOK {
		t.Fatalf("gateway /healthz = %d %s", status, body)
	}
	return base
}

// TestGatewayEndToEnd is issue 4's end-to-end check: the real issuer and
// the real gateway (both the built binary) in front of a stub upstream.
// Tokens from the real flow reach exactly the routes their scopes cover;
// the upstream sees the identity headers the gateway set, never forged
// ones.
func TestGatewayEndToEnd(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	up := &upstreamStub{}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	gw := startGatewayProcess(t, upSrv.URL, e.base)

	token := func(scopes ...string) (clientID string, tok *oauth2.Token) {
		t.Helper()
		id, secret := e.client(t, e2eRedirect, scopes)
		conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInHeader, scopes...)
		verifier := oauth2.GenerateVerifier()
		code := e.codeFlow(t, ctx, consenttest.New(), conf, oauth2.S256ChallengeOption(verifier))
		tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		return id, tok
	}
	userScopes := []string{"BOOKING_READ", "PROFILE_READ", "TEAM_PROFILE_READ"}
	idA, tokA := token(userScopes...)
	idB, tokB := token("ORG_PROFILE_READ")

	// Forged identity headers every request carries; the gateway must drop
	// them (also the underscore spelling).
	forged := http.Header{
		"X-Oauthd-User-Id":      {"999"},
		"X-Oauthd-Client-Id":    {"forged-client"},
		"X-Oauthd-Scopes":       {"ORG_MEMBERSHIP_WRITE"},
		"X-Oauthd-Unrestricted": {"true"},
		"X_oauthd_user_id":      {"999"},
	}
	const garbage = "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0."
	tests := []struct {
		name, method, path, tok string
		want                    int
		wantErr                 string // error in WWW-Authenticate
	}{
		{"A: own bookings", "GET", "/v2/bookings", tokA.AccessToken, 200, ""},
		{"A: profile", "GET", "/v2/me", tokA.AccessToken, 200, ""},
		{"A: teams", "GET", "/v2/teams", tokA.AccessToken, 200, ""},
		{"A: one team", "GET", "/v2/teams/7", tokA.AccessToken, 200, ""},
		{"A: org team (TEAM_ route under org)", "GET", "/v2/organizations/3/teams/7", tokA.AccessToken, 200, ""},
		{"A: org teams need ORG_PROFILE_READ", "GET", "/v2/organizations/3/teams", tokA.AccessToken, 403, "insufficient_scope"},
		{"A: static teams/me beats {teamId}", "GET", "/v2/organizations/3/teams/me", tokA.AccessToken, 403, "insufficient_scope"},
		{"A: schedules", "GET", "/v2/schedules", tokA.AccessToken, 403, "insufficient_scope"},
		{"A: READ does not give WRITE", "POST", "/v2/bookings/b1/confirm", tokA.AccessToken, 403, "insufficient_scope"},
		{"A: route not in the table", "GET", "/v2/secret-admin", tokA.AccessToken, 403, ""},
		{"B: org teams", "GET", "/v2/organizations/3/teams", tokB.AccessToken, 200, ""},
		{"B: org teams/me", "GET", "/v2/organizations/3/teams/me", tokB.AccessToken, 200, ""},
		{"B: ORG_ implies the TEAM_ twin", "GET", "/v2/teams", tokB.AccessToken, 200, ""},
		{"B: ORG_ implies the TEAM_ twin under org", "GET", "/v2/organizations/3/teams/7", tokB.AccessToken, 200, ""},
		{"B: no user scope", "GET", "/v2/me", tokB.AccessToken, 403, "insufficient_scope"},
		{"B: bookings", "GET", "/v2/bookings", tokB.AccessToken, 403, "insufficient_scope"},
		{"no token", "GET", "/v2/bookings", "", 401, ""},
		{"alg none token", "GET", "/v2/bookings", garbage, 401, "invalid_token"},
		{"tampered token", "GET", "/v2/bookings", tamper(tokA.AccessToken), 401, "invalid_token"},
		{"public route, no token", "POST", "/v2/bookings", "", 200, ""},
		{"public route, bad token ignored", "GET", "/v2/slots", garbage, 200, ""},
	}
	up.take()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, gw+tt.path, strings.NewReader(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range forged {
				req.Header[k] = v
			}
			if tt.tok != "" {
				req.Header.Set("Authorization", "Bearer "+tt.tok)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			seen := up.take()
			if resp.StatusCode != tt.want {
				t.Fatalf("%s %s = %d %s; want %d", tt.method, tt.path, resp.StatusCode, body, tt.want)
			}
			if tt.want != 200 {
				if len(seen) != 0 {
					t.Errorf("a refused request reached the upstream: %+v", seen)
				}
				if wa := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(wa, "Bearer") || !strings.Contains(wa, tt.wantErr) {
					t.Errorf("WWW-Authenticate = %q; want Bearer with %q", wa, tt.wantErr)
				}
				return
			}
			if !strings.Contains(string(body), `"upstream":true`) || len(seen) != 1 {
				t.Fatalf("allowed request: body %s, upstream saw %d requests; want the upstream's answer", body, len(seen))
			}
			got := seen[0]
			if got.Method != tt.method || got.Path != tt.path {
				t.Errorf("upstream saw %s %s; want %s %s", got.Method, got.Path, tt.method, tt.path)
			}
			var want map[string]string
			switch tt.tok {
			case tokA.AccessToken:
				want = map[string]string{"X-Oauthd-User-Id": e2eJSONInt(e.userID), "X-Oauthd-Subject-Type": "user", "X-Oauthd-Client-Id": idA, "X-Oauthd-Scopes": strings.Join(userScopes, " ")}
			case tokB.AccessToken:
				want = map[string]string{"X-Oauthd-User-Id": e2eJSONInt(e.userID), "X-Oauthd-Subject-Type": "user", "X-Oauthd-Client-Id": idB, "X-Oauthd-Scopes": "ORG_PROFILE_READ"}
			default: // public route without a (valid) token: no identity at all
				want = map[string]string{}
			}
			for name, vs := range got.Header {
				if !strings.HasPrefix(strings.ToLower(strings.ReplaceAll(name, "_", "-")), "x-oauthd-") {
					continue
				}
				w, ok := want[http.CanonicalHeaderKey(name)]
				if !ok || len(vs) != 1 || vs[0] != w {
					t.Errorf("upstream saw %s: %q; want %q (set by the gateway only)", name, vs, w)
				}
			}
			for name, w := range want {
				if got.Header.Get(name) != w {
					t.Errorf("upstream saw %s: %q; want %q", name, got.Header.Get(name), w)
				}
			}
		})
	}

	// Emergency key revocation. The issuer stops accepting the token at
	// once. The gateway verifies offline against its cached JWKS: the
	// revoked kid is a kid it knows, so it does not refetch, and keeps
	// accepting the token until its cache expires (the JWKS says
	// max-age=60, keys.DefaultJWKSMaxAge). That window is documented in
	// the README and reported here, not hidden. The gateway's token cache
	// (which has tokA from the cases above) does not lengthen it: a cached
	// token is answered only while its kid is in the JWKS the gateway
	// holds (keys/verify TestCacheRemoteKeyRevoked).
	t.Run("revoked signing key", func(t *testing.T) {
		active := kidIn(keyStates(t, e.db), "active")
		e.cli(t, "keys", "revoke", "--", active)
		if status, body := e.me(t, tokA.AccessToken); status != http.StatusUnauthorized {
			t.Errorf("issuer /v2/me with a token of the revoked key = %d %s; want 401 at once", status, body)
		}
		status, body := e2eGet(t, gw+"/v2/bookings", tokA.AccessToken, nil)
		switch status {
		case http.StatusUnauthorized:
			t.Log("the gateway refused the revoked key's token at once")
		case http.StatusOK:
			t.Log("KNOWN LIMITATION: the gateway still accepts a token of the revoked key " + active +
				": its RemoteKeySet answers known kids from the cached JWKS until the cache expires " +
				"(Cache-Control max-age=60 from the issuer, at least verify.MinCacheAge), so a revocation " +
				"reaches the gateway within a minute")
		default:
			t.Errorf("gateway with a token of the revoked key = %d %s; want 401 (or 200 while its JWKS cache is fresh)", status, body)
		}
		up.take()

		// A token signed by the promoted key (published before as next,
		// so already in the gateway's cache) passes at once.
		_, fresh := token("BOOKING_READ")
		claims, hdr := e.verifyJWT(t, ctx, fresh.AccessToken)
		if hdr.KeyID() == active || claims["scope"] != "BOOKING_READ" {
			t.Fatalf("new token kid %s (revoked %s), claims %v", hdr.KeyID(), active, claims)
		}
		if status, body := e2eGet(t, gw+"/v2/bookings", fresh.AccessToken, nil); status != http.StatusOK {
			t.Errorf("gateway with a token of the promoted key = %d %s; want 200", status, body)
		}
		if seen := up.take(); len(seen) != 1 || seen[0].Header.Get("X-Oauthd-Scopes") != "BOOKING_READ" {
			t.Errorf("upstream saw %+v", seen)
		}
	})
}

// tamper flips one character of the token's payload.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || len(parts[1]) < 10 {
		return tok + "x"
	}
	p := []byte(parts[1])
	if p[5] == 'A' {
		p[5] = 'B'
	} else {
		p[5] = 'A'
	}
	return parts[0] + "." + string(p) + "." + parts[2]
}
