package issuer

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
)

// TestPARAnonymousStoresNothing: anyone can push for a public client (its
// ID is public) and follow the request_uri without a session; neither
// writes to the store. A public client's pushes are limited per address
// and per client (429 with Retry-After); a confidential client's are not.
func TestPARAnonymousStoresNothing(t *testing.T) {
	var counter *nonceCounter
	env := newTkEnv(t, func(c *Config) { counter = &nonceCounter{Store: c.Store}; c.Store = counter })
	ctx := context.Background()
	body := tkForm("client_id", "pub", "response_type", "code", "redirect_uri", tkRedirect, "scope", "PROFILE_READ",
		"code_challenge", tkChallenge(tkVerifier), "code_challenge_method", "S256")
	push := func(remote string) (int, string, string) {
		rec := env.do(tkReq{path: "/v2/auth/oauth2/par", body: body, remote: remote})
		var r struct {
			RequestURI string `json:"request_uri"`
		}
		json.Unmarshal(rec.Body.Bytes(), &r)
		return rec.Code, r.RequestURI, rec.Header().Get("Retry-After")
	}
	// Per address: 30 at once.
	for i := range 30 {
		code, uri, _ := push("192.0.2.1:1234")
		if code != http.StatusCreated {
			t.Fatalf("push %d = %d", i, code)
		}
		if _, err := env.s.CheckAuthorize(ctx, url.Values{"client_id": {"pub"}, "request_uri": {uri}}); err != nil {
			t.Fatalf("CheckAuthorize of push %d: %v", i, err)
		}
	}
	if code, _, ra := push("192.0.2.1:1234"); code != http.StatusTooManyRequests || ra == "" {
		t.Fatalf("push 31 from one address = %d (Retry-After %q); want 429 with Retry-After", code, ra)
	}
	if n := counter.uses.Load(); n != 0 {
		t.Fatalf("%d one-time values stored by anonymous pushes and their first uses; want 0", n)
	}
	// Per client: parMaxOutstanding within a request_uri's lifetime,
	// whatever the addresses.
	n := 30
	for i := 0; n < parMaxOutstanding; i++ {
		code, _, _ := push(fmt.Sprintf("198.51.%d.%d:1", i/250, i%250))
		if code != http.StatusCreated {
			t.Fatalf("push %d for the client = %d", n, code)
		}
		n++
	}
	if code, _, ra := push("203.0.113.9:1"); code != http.StatusTooManyRequests || ra == "" {
		t.Fatalf("push over the client's cap = %d (Retry-After %q); want 429", code, ra)
	}
	// A confidential client authenticates: not limited.
	if rec := env.do(tkReq{path: "/v2/auth/oauth2/par", remote: "203.0.113.9:1", body: tkForm("client_id", "conf", "client_secret", env.secretA,
		"response_type", "code", "redirect_uri", tkRedirect, "scope", "PROFILE_READ")}); rec.Code != http.StatusCreated {
		t.Fatalf("confidential push = %d %s", rec.Code, rec.Body)
	}
	// The cap frees up as request_uris expire.
	env.advance(2 * parRequestTTL)
	if code, _, _ := push("203.0.113.9:1"); code != http.StatusCreated {
		t.Fatalf("push after the request_uris expired = %d", code)
	}
	if n := counter.uses.Load(); n != 0 {
		t.Fatalf("%d one-time values stored; want 0", n)
	}
}
