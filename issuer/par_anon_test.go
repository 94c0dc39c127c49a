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
// (429 with Retry-After), never per client (a flood from many addresses
// would lock the app's users out); a confidential client's are not.
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
	// Never per client: pushes from many addresses (a few dozen, each
	// within its own limit) do not refuse the app's other users — an app
	// that requires PAR would have no other way to sign them in.
	for i := range 1200 {
		if code, _, _ := push(fmt.Sprintf("198.51.%d.%d:1", i/250, i%250)); code != http.StatusCreated {
			t.Fatalf("push %d for the client from its own address = %d", i, code)
		}
	}
	if code, _, ra := push("203.0.113.9:1"); code != http.StatusCreated {
		t.Fatalf("a user's push after a flood from many addresses = %d (Retry-After %q); want 201: no per-client cap to exhaust", code, ra)
	}
	// A confidential client authenticates: not limited.
	if rec := env.do(tkReq{path: "/v2/auth/oauth2/par", remote: "203.0.113.9:1", body: tkForm("client_id", "conf", "client_secret", env.secretA,
		"response_type", "code", "redirect_uri", tkRedirect, "scope", "PROFILE_READ")}); rec.Code != http.StatusCreated {
		t.Fatalf("confidential push = %d %s", rec.Code, rec.Body)
	}
	// The address's limit frees up with time.
	env.advance(2 * parRequestTTL)
	if code, _, _ := push("192.0.2.1:1234"); code != http.StatusCreated {
		t.Fatalf("push from the limited address a while later = %d", code)
	}
	if n := counter.uses.Load(); n != 0 {
		t.Fatalf("%d one-time values stored; want 0", n)
	}
}
