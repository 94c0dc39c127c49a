package e2e

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
)

// tokenCacheHits reads oauthd_token_cache_hits_total from /metrics.
func tokenCacheHits(t *testing.T, base string) float64 {
	t.Helper()
	status, body := e2eGet(t, base+"/metrics", "", nil)
	m := regexp.MustCompile(`(?m)^oauthd_token_cache_hits_total ([0-9.e+]+)$`).FindStringSubmatch(body)
	if status != http.StatusOK || m == nil {
		t.Fatalf("/metrics = %d without oauthd_token_cache_hits_total", status)
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestTokenCacheE2E runs the real binary: /v2/me answers a token it has
// seen from the verified-token cache (the hit counter moves); variants of
// the cached token (one character changed, one added, one removed) are
// refused; and after `oauthd keys revoke` of the token's signing key the
// very next call is refused, although the token was cached.
func TestTokenCacheE2E(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
	conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInHeader, "PROFILE_READ")
	verifier := oauth2.GenerateVerifier()
	code := e.codeFlow(t, ctx, consenttest.New(), conf, oauth2.S256ChallengeOption(verifier))
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	at := tok.AccessToken

	e.wantMe(t, at)
	before := tokenCacheHits(t, e.base)
	for range 3 {
		e.wantMe(t, at)
	}
	if got := tokenCacheHits(t, e.base); got < before+3 {
		t.Fatalf("cache hits %v → %v after 3 calls with the same token; want +3", before, got)
	}

	for name, bad := range map[string]string{
		"one character changed": tamper(at),
		"one character added":   at + "A",
		"last character gone":   at[:len(at)-1],
		"signature of another":  at[:strings.LastIndexByte(at, '.')] + "." + strings.Repeat("A", 86),
	} {
		status, body := e.me(t, bad)
		if status != http.StatusUnauthorized || !strings.Contains(body, "invalid_token") {
			t.Errorf("%s: /v2/me = %d %s; want 401 invalid_token", name, status, body)
		}
	}
	e.wantMe(t, at)

	_, hdr := e.verifyJWT(t, ctx, at)
	e.cli(t, "keys", "revoke", "--", hdr.KeyID())
	status, body := e.me(t, at)
	if status != http.StatusUnauthorized || !strings.Contains(body, "invalid_token") {
		t.Fatalf("/v2/me right after `keys revoke` of the token's key = %d %s; want 401 invalid_token", status, body)
	}
}
