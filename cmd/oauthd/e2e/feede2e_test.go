package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
)

// feedRefusalBound is the stated bound from a revocation's answer to the
// gateway's refusal on loopback: the gateway's fetch interval (2 s) plus
// the feed's max-age (1 s) plus a second of slack for a loaded machine.
const feedRefusalBound = 4 * time.Second

// TestGatewayRevocationFeed is the issue "Beyond the peers" item 4 check:
// grants revoked (RFC 7009) while the real gateway runs are refused by it
// within feedRefusalBound, while the others keep working; the gateway
// asks the issuer for nothing but the JWKS and the feed (no introspection,
// nothing on the request path). It reports the revoke → refusal latency.
func TestGatewayRevocationFeed(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	up := &upstreamStub{}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)

	// Everything the gateway asks the issuer goes through this proxy, which
	// records the paths.
	target, _ := url.Parse(e.base)
	var pathsMu sync.Mutex
	paths := map[string]int{}
	rp := httputil.NewSingleHostReverseProxy(target)
	spy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pathsMu.Lock()
		paths[r.URL.Path]++
		pathsMu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(spy.Close)
	cmd := exec.Command(oauthdBin, "gateway", "--listen", "127.0.0.1:0", "--upstream", upSrv.URL, "--issuer", e.base,
		"--jwks-url", spy.URL+"/.well-known/jwks.json", "--revocation-feed-url", spy.URL+"/.well-known/revoked-grants", "--dpop-trust-host")
	gwLog := &logSink{}
	addr, _ := startProcess(t, cmd, "gateway", gatewayListenRE, gwLog)
	gw := "http://" + addr

	const n = 24
	id, secret := e.client(t, e2eRedirect, []string{"BOOKING_READ"})
	conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInHeader, "BOOKING_READ")
	toks := make([]*oauth2.Token, n+1)
	for i := range toks {
		v := oauth2.GenerateVerifier()
		code := e.codeFlow(t, ctx, consenttest.New(), conf, oauth2.S256ChallengeOption(v))
		tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(v))
		if err != nil {
			t.Fatalf("exchange %d: %v", i, err)
		}
		toks[i] = tok
	}
	keep := toks[n] // never revoked
	for i, tok := range toks {
		if status, body := e2eGet(t, gw+"/v2/bookings", tok.AccessToken, nil); status != http.StatusOK {
			t.Fatalf("gateway with grant %d before any revocation = %d %s", i, status, body)
		}
	}

	// Revoke the n grants at random moments over 4 s (so that they fall at
	// every phase of the gateway's polling), each by its refresh token, and
	// poll the gateway with its access token every 10 ms until refused.
	gwGet := func(tok string) (int, error) {
		req, _ := http.NewRequest(http.MethodGet, gw+"/v2/bookings", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	lat := make([]time.Duration, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			time.Sleep(time.Duration(rand.Int64N(int64(4 * time.Second))))
			form := url.Values{"token": {toks[i].RefreshToken}, "token_type_hint": {"refresh_token"}}
			req, _ := http.NewRequest(http.MethodPost, e.base+"/v2/auth/oauth2/revoke", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth(id, secret)
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("revoke %d: %v %v", i, resp, err)
				return
			}
			resp.Body.Close()
			revoked := time.Now()
			for {
				status, err := gwGet(toks[i].AccessToken)
				if err != nil {
					errs <- fmt.Errorf("gateway %d: %w", i, err)
					return
				}
				if status == http.StatusUnauthorized {
					lat[i] = time.Since(revoked)
					return
				}
				if status != http.StatusOK {
					errs <- fmt.Errorf("gateway %d = %d; want 200 then 401", i, status)
					return
				}
				if time.Since(revoked) > 3*feedRefusalBound {
					errs <- fmt.Errorf("grant %d still accepted by the gateway %s after its revocation", i, time.Since(revoked))
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	slices.Sort(lat)
	p50, p99, worst := lat[len(lat)/2], lat[(len(lat)*99+99)/100-1], lat[len(lat)-1]
	t.Logf("revoke → refusal at the gateway over %d grants: p50 %s, p99 %s, max %s (bound %s)", n,
		p50.Round(time.Millisecond), p99.Round(time.Millisecond), worst.Round(time.Millisecond), feedRefusalBound)
	if p99 > feedRefusalBound {
		t.Errorf("p99 revoke → refusal %s; want ≤ %s", p99, feedRefusalBound)
	}
	// The grant not revoked still passes; once refused, a revoked one stays refused.
	if status, body := e2eGet(t, gw+"/v2/bookings", keep.AccessToken, nil); status != http.StatusOK {
		t.Errorf("gateway with the grant not revoked = %d %s; want 200", status, body)
	}
	// The refusal says why, and the gateway logs it once per grant.
	for range 3 {
		if status, body := e2eGet(t, gw+"/v2/bookings", toks[0].AccessToken, nil); status != http.StatusUnauthorized || !strings.Contains(body, `"error_description":"grant revoked`) {
			t.Errorf("gateway with a revoked grant later = %d %s; want 401 grant revoked", status, body)
		}
	}
	if lines := gwLog.grep("refusing the tokens of a revoked grant"); len(lines) != n {
		t.Errorf("the gateway logged %d revoked-grant lines for %d revoked grants; want one each:\n%s", len(lines), n, strings.Join(lines, "\n"))
	}
	pathsMu.Lock()
	defer pathsMu.Unlock()
	for p := range paths {
		if p != "/.well-known/jwks.json" && p != "/.well-known/revoked-grants" {
			t.Errorf("the gateway called the issuer at %s (%d times); want only the JWKS and the feed", p, paths[p])
		}
	}
	if paths["/.well-known/revoked-grants"] == 0 {
		t.Error("the gateway never fetched the feed")
	}
}
