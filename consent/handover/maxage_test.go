package handover_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"oauthd/consent/handover"
)

// platform is an httptest JWKS server whose keys, Cache-Control and
// availability a test changes.
type platform struct {
	mu           sync.Mutex
	keys         map[string]*ecdsa.PrivateKey
	cacheControl string
	down         bool
	fetches      int
}

func (p *platform) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fetches++
	if p.down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	set := jwk.NewSet()
	for kid, k := range p.keys {
		j, _ := jwk.FromRaw(&k.PublicKey)
		_ = j.Set(jwk.KeyIDKey, kid)
		_ = set.AddKey(j)
	}
	if p.cacheControl != "" {
		w.Header().Set("Cache-Control", p.cacheControl)
	}
	_ = json.NewEncoder(w).Encode(set)
}

func (p *platform) set(fn func(p *platform)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fn(p)
}

// TestRemovedKeyStopsWithinMaxAge: a key the platform removes from its
// JWKS stops being accepted once the fetched set expires: after the
// response's Cache-Control max-age, capped by Config.MaxAge (default 5
// minutes), whatever longer max-age the platform sends; and keys that
// expired are not used while the JWKS cannot be fetched.
func TestRemovedKeyStopsWithinMaxAge(t *testing.T) {
	const aud = "https://oauthd.example"
	tests := []struct {
		name         string
		cacheControl string
		maxAge       time.Duration // Config.MaxAge; 0: the default
		want         time.Duration // how long the removed key is still accepted
	}{
		{"no Cache-Control: the default bound", "", 0, handover.DefaultMaxAge},
		{"a shorter max-age is followed", "public, max-age=60", 0, time.Minute},
		{"a longer max-age is capped", "public, max-age=86400", 0, handover.DefaultMaxAge},
		{"a shorter flag caps it", "max-age=600", 2 * time.Minute, 2 * time.Minute},
		{"no-store: fetched again after MinRefresh", "no-store", 0, 2 * time.Second},
		{"no-cache: fetched again after MinRefresh", "no-cache", 0, 2 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			leaked, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			fresh, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			p := &platform{keys: map[string]*ecdsa.PrivateKey{"leaked": leaked, "fresh": fresh}, cacheControl: tc.cacheControl}
			srv := httptest.NewServer(p)
			defer srv.Close()
			now := t0
			v, err := handover.New(context.Background(), handover.Config{Issuer: "https://platform.example", Audience: aud,
				Keys: srv.URL, MaxAge: tc.maxAge, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			sign := func(k *ecdsa.PrivateKey, kid string) string { return signedAt(k, kid, aud, now) }
			if _, err := v.Verify(context.Background(), sign(leaked, "leaked")); err != nil {
				t.Fatalf("before the removal: %v", err)
			}
			p.set(func(p *platform) { delete(p.keys, "leaked") })
			now = t0.Add(tc.want - time.Second)
			if tc.want > 2*time.Second {
				if _, err := v.Verify(context.Background(), sign(leaked, "leaked")); err != nil {
					t.Fatalf("%s after the fetch (cached): %v; want accepted", tc.want-time.Second, err)
				}
			}
			now = t0.Add(tc.want)
			if _, err := v.Verify(context.Background(), sign(leaked, "leaked")); !errors.Is(err, handover.ErrSignature) {
				t.Fatalf("%s after the fetch: %v; want ErrSignature (the platform removed the key)", tc.want, err)
			}
			if _, err := v.Verify(context.Background(), sign(fresh, "fresh")); err != nil {
				t.Fatalf("the key still published: %v", err)
			}
		})
	}
}

// TestExpiredKeysNotUsedWhileJWKSDown: once the fetched keys expire, a
// JWKS that cannot be fetched refuses every assertion (ErrKeys) instead
// of keeping the old keys, so making the JWKS unreachable cannot keep a
// removed key alive; before they expire, an unknown kid's failed fetch
// keeps the keys in hand. Fetches stay at most one per MinRefresh.
func TestExpiredKeysNotUsedWhileJWKSDown(t *testing.T) {
	const aud = "https://oauthd.example"
	k1, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p := &platform{keys: map[string]*ecdsa.PrivateKey{"k1": k1}, cacheControl: "max-age=60"}
	srv := httptest.NewServer(p)
	defer srv.Close()
	now := t0
	v, err := handover.New(context.Background(), handover.Config{Issuer: "https://platform.example", Audience: aud,
		Keys: srv.URL, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(kid string) string { return signedAt(k1, kid, aud, now) }
	p.set(func(p *platform) { p.down = true })
	now = now.Add(10 * time.Second)
	if _, err := v.Verify(context.Background(), sign("unknown")); !errors.Is(err, handover.ErrSignature) {
		t.Fatalf("unknown kid, JWKS down, keys fresh: %v; want ErrSignature", err)
	}
	if _, err := v.Verify(context.Background(), sign("k1")); err != nil {
		t.Fatalf("known kid, JWKS down, keys fresh: %v; want accepted", err)
	}
	now = t0.Add(time.Minute)
	for i := range 5 {
		if _, err := v.Verify(context.Background(), sign("k1")); !errors.Is(err, handover.ErrKeys) {
			t.Fatalf("attempt %d, keys expired, JWKS down: %v; want ErrKeys", i, err)
		}
	}
	if got := p.fetches; got != 3 {
		t.Fatalf("%d fetches; want 3 (start, the unknown kid, one after expiry)", got)
	}
	p.set(func(p *platform) { p.down = false })
	now = now.Add(2 * time.Second)
	if _, err := v.Verify(context.Background(), sign("k1")); err != nil {
		t.Fatalf("JWKS back: %v; want accepted", err)
	}
}
