package issuer

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"oauthd/data"
)

// TestTokenConcurrentRefresh: N concurrent refreshes of one refresh token.
// Exactly one succeeds; every other gets invalid_grant. A loser that
// arrives after the winner's rotation presents a rotated-away token, which
// is reuse: the family is revoked, so the winner's new token fails too
// (RFC 9700 §4.14.2 — the documented outcome: at most one success, and a
// family that saw a reuse is gone).
func TestTokenConcurrentRefresh(t *testing.T) {
	env := newTkEnv(t)
	rt := env.exchange().RefreshToken
	const n = 16
	codes := make([]int, n)
	bodies := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			rec := env.do(env.refreshReq("conf", env.secretA, rt))
			codes[i], bodies[i] = rec.Code, rec.Body.String()
		})
	}
	wg.Wait()
	ok := 0
	for i, c := range codes {
		switch c {
		case http.StatusOK:
			ok++
		case http.StatusBadRequest:
		default:
			t.Errorf("request %d: status %d %s", i, c, bodies[i])
		}
	}
	if ok != 1 {
		t.Errorf("%d of %d concurrent refreshes succeeded; want exactly 1", ok, n)
	}
	// The store serializes the rotations: every loser came after the winner
	// and presented a rotated-away token, so the first one revoked the
	// family and the rest found none.
	if got := tkCounter(t, env.s.metrics.refreshReuse); got != 1 {
		t.Errorf("reuse detections = %v; want 1", got)
	}
	famID, _ := data.ParseRefreshToken(rt)
	if _, err := env.store.GetFamily(context.Background(), famID); !errors.Is(err, data.ErrNotFound) {
		t.Errorf("family after concurrent reuse: err = %v; want ErrNotFound", err)
	}
}

// TestTokenConcurrentCodeExchange: N concurrent exchanges of one code;
// exactly one succeeds.
func TestTokenConcurrentCodeExchange(t *testing.T) {
	env := newTkEnv(t)
	code := env.code(tkCodeOpts{client: "conf"})
	const n = 16
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			codes[i] = env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code,
				"redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)}).Code
		})
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		if c == http.StatusOK {
			ok++
		} else if c != http.StatusBadRequest {
			t.Errorf("status %d", c)
		}
	}
	if ok != 1 {
		t.Errorf("%d of %d concurrent exchanges succeeded; want exactly 1", ok, n)
	}
}
