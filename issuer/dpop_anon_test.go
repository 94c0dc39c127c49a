package issuer

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"oauthd/data"
	"oauthd/keys/verify/dpoptest"
)

// nonceCounter is a Store that counts the one-time values written.
type nonceCounter struct {
	Store
	uses atomic.Int64
}

func (n *nonceCounter) UseNonce(ctx context.Context, key []byte, expires time.Time) error {
	n.uses.Add(1)
	return n.Store.UseNonce(ctx, key, expires)
}

// TestTokenDPoPAnonymousFloodStoresNothing: a public client's ID is
// public, so anyone can send token requests in its name with fresh, valid
// proofs; none of them writes to the store while the grant fails. The
// proof of a request whose grant passes is spent in the store once.
func TestTokenDPoPAnonymousFloodStoresNothing(t *testing.T) {
	var counter *nonceCounter
	env := newTkEnv(t, func(c *Config) { counter = &nonceCounter{Store: c.Store}; c.Store = counter })
	k := dpoptest.NewES256()
	for i := range 300 {
		body := tkForm("grant_type", "refresh_token", "refresh_token", data.NewSecret(data.PrefixRefreshToken), "client_id", "pub")
		if i%2 == 1 {
			body = tkForm("grant_type", "authorization_code", "code", data.NewAuthCode(env.clock()), "redirect_uri", tkRedirect,
				"client_id", "pub", "code_verifier", tkVerifier)
		}
		if rec := env.do(tkReq{body: body, header: [][2]string{env.proof(k)}}); rec.Code != http.StatusBadRequest || tkOAuthErr(t, rec) != "invalid_grant" {
			t.Fatalf("request %d = %d %s; want 400 invalid_grant", i, rec.Code, rec.Body)
		}
	}
	if n := counter.uses.Load(); n != 0 {
		t.Fatalf("%d one-time values stored by 300 anonymous requests; want 0", n)
	}
	code := env.code(tkCodeOpts{client: "pub", challenge: tkChallenge(tkVerifier), scopes: []string{"PROFILE_READ"}})
	env.mustTokens(env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect,
		"client_id", "pub", "code_verifier", tkVerifier), header: [][2]string{env.proof(k)}}))
	if n := counter.uses.Load(); n != 1 {
		t.Fatalf("%d one-time values stored by a code exchange with a proof; want 1", n)
	}
}

// raceStore is a Store whose NonceUsed never sees a spent jti: it stands
// for two requests with one proof racing on two replicas, both past the
// read before either spent it.
type raceStore struct{ Store }

func (raceStore) NonceUsed(context.Context, []byte) (bool, error) { return false, nil }

// TestTokenDPoPReplayAcrossReplicas: a proof already spent is refused
// before its grant is used, by the replica that saw it (from memory) and
// by another replica sharing the store (a read); one that races past the
// read is refused once the grant has passed, and that grant is revoked,
// no token sent.
func TestTokenDPoPReplayAcrossReplicas(t *testing.T) {
	key := make([]byte, data.RefreshKeySize)
	a := newTkEnv(t, func(c *Config) { c.RefreshTokenKey = key })
	b := newTkEnv(t, func(c *Config) { c.RefreshTokenKey = key; c.Store = a.store })
	racing := newTkEnv(t, func(c *Config) { c.RefreshTokenKey = key; c.Store = raceStore{a.store} })
	k := dpoptest.NewES256()
	grant := func() tkTokens {
		code := a.code(tkCodeOpts{client: "pub", challenge: tkChallenge(tkVerifier), scopes: []string{"PROFILE_READ"}})
		return a.mustTokens(a.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect,
			"client_id", "pub", "code_verifier", tkVerifier), header: [][2]string{a.proof(k)}}))
	}
	first, second := grant(), grant()
	refresh := func(env *tkEnv, rt string, p [2]string) (int, string) {
		rec := env.do(tkReq{body: tkForm("grant_type", "refresh_token", "refresh_token", rt, "client_id", "pub"), header: [][2]string{p}})
		if rec.Code == http.StatusOK {
			return rec.Code, ""
		}
		return rec.Code, tkOAuthErr(t, rec)
	}
	p := a.proof(k)
	if code, e := refresh(a, first.RefreshToken, p); code != http.StatusOK {
		t.Fatalf("first use of the proof = %d %s", code, e)
	}
	// The same replica: refused from memory; the other grant is intact.
	if code, e := refresh(a, second.RefreshToken, p); code != http.StatusBadRequest || e != "invalid_dpop_proof" {
		t.Fatalf("replay to the same replica = %d %s; want 400 invalid_dpop_proof", code, e)
	}
	if !a.familyExists(second.RefreshToken) {
		t.Fatal("a replay refused from memory revoked the grant it came with")
	}
	// Another replica: refused by the store's read, before the grant.
	if code, e := refresh(b, second.RefreshToken, p); code != http.StatusBadRequest || e != "invalid_dpop_proof" {
		t.Fatalf("replay to another replica = %d %s; want 400 invalid_dpop_proof", code, e)
	}
	if !a.familyExists(second.RefreshToken) {
		t.Fatal("a replay refused by the store's read revoked the grant it came with")
	}
	// A replay racing past the read: the store refuses the jti once the
	// grant passed; the grant is revoked.
	if code, e := refresh(racing, second.RefreshToken, p); code != http.StatusBadRequest || e != "invalid_dpop_proof" {
		t.Fatalf("racing replay = %d %s; want 400 invalid_dpop_proof", code, e)
	}
	if a.familyExists(second.RefreshToken) {
		t.Fatal("the grant a replayed proof was used with is still live")
	}
	if !a.familyExists(first.RefreshToken) {
		t.Fatal("the grant of the proof's first use was revoked")
	}
}
