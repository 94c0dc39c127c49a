package verify_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"oauthd/keys/verify"
)

// jwksServer serves a JWKS the test changes, and counts requests.
type jwksServer struct {
	*httptest.Server
	mu           sync.Mutex
	keys         []testKey
	extra        []map[string]any // raw JWK members appended as-is
	down         bool
	cacheControl string
	requests     atomic.Int32
}

func newJWKSServer(t *testing.T, ks ...testKey) *jwksServer {
	s := &jwksServer{keys: ks, cacheControl: "public, max-age=300"}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		set := jwk.NewSet()
		for _, k := range s.keys {
			j, err := jwk.FromRaw(k.pub())
			if err != nil {
				panic(err)
			}
			j.Set(jwk.KeyIDKey, k.kid)
			j.Set(jwk.AlgorithmKey, jwa.SignatureAlgorithm(k.alg))
			j.Set(jwk.KeyUsageKey, "sig")
			set.AddKey(j)
		}
		b, _ := json.Marshal(set)
		if len(s.extra) > 0 {
			var doc struct {
				Keys []any `json:"keys"`
			}
			json.Unmarshal(b, &doc)
			for _, e := range s.extra {
				doc.Keys = append(doc.Keys, e)
			}
			b, _ = json.Marshal(doc)
		}
		w.Header().Set("Content-Type", "application/json")
		if s.cacheControl != "" {
			w.Header().Set("Cache-Control", s.cacheControl)
		}
		w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(f func(s *jwksServer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func newRemote(t *testing.T, srv *jwksServer, c *clock) (*verify.RemoteKeySet, *verify.Verifier) {
	t.Helper()
	ks := verify.NewRemoteKeySet(verify.RemoteConfig{
		URL: srv.URL + "/.well-known/jwks.json", Client: srv.Client(),
		Logger: slog.New(slog.DiscardHandler), Now: c.Now,
	})
	v, err := verify.New(verify.Config{Issuer: issuer, Keys: ks, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return ks, v
}

func TestRemoteUnknownKidThenPublished(t *testing.T) {
	es, ed, _ := fixedKeys(t)
	c := newClock()
	srv := newJWKSServer(t, es)
	_, v := newRemote(t, srv, c)
	edTok := mint(t, ed, validClaims(c.Now()), nil)

	if _, err := v.Verify(t.Context(), edTok); !errors.Is(err, verify.ErrUnknownKey) {
		t.Fatalf("Verify before the key is published = %v; want ErrUnknownKey", err)
	}
	srv.set(func(s *jwksServer) { s.keys = append(s.keys, ed) })
	// Within MinRefresh: no refetch, still unknown.
	c.Add(5 * time.Second)
	if _, err := v.Verify(t.Context(), edTok); !errors.Is(err, verify.ErrUnknownKey) {
		t.Fatalf("Verify within MinRefresh = %v; want ErrUnknownKey", err)
	}
	if n := srv.requests.Load(); n != 1 {
		t.Errorf("requests = %d; want 1", n)
	}
	c.Add(5 * time.Second)
	if _, err := v.Verify(t.Context(), edTok); err != nil {
		t.Fatalf("Verify after MinRefresh = %v; want success", err)
	}
	if n := srv.requests.Load(); n != 2 {
		t.Errorf("requests = %d; want 2", n)
	}
	// A known kid in a fresh cache makes no request.
	if _, err := v.Verify(t.Context(), mint(t, es, validClaims(c.Now()), nil)); err != nil {
		t.Fatal(err)
	}
	if n := srv.requests.Load(); n != 2 {
		t.Errorf("requests = %d; want 2", n)
	}
}

func TestRemoteRevokedKey(t *testing.T) {
	es, ed, _ := fixedKeys(t)
	c := newClock()
	srv := newJWKSServer(t, es, ed)
	_, v := newRemote(t, srv, c)
	tok := mint(t, es, validClaims(c.Now()), nil)
	if _, err := v.Verify(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	srv.set(func(s *jwksServer) { s.keys = []testKey{ed} }) // es revoked
	c.Add(301 * time.Second)                                // the cache (max-age=300) expired
	if _, err := v.Verify(t.Context(), tok); !errors.Is(err, verify.ErrUnknownKey) {
		t.Errorf("Verify with revoked key = %v; want ErrUnknownKey", err)
	}
}

func TestRemoteIssuerDown(t *testing.T) {
	es, _, _ := fixedKeys(t)
	c := newClock()
	srv := newJWKSServer(t, es)
	_, v := newRemote(t, srv, c)
	if _, err := v.Verify(t.Context(), mint(t, es, validClaims(c.Now()), nil)); err != nil {
		t.Fatal(err)
	}
	srv.set(func(s *jwksServer) { s.down = true })
	for _, step := range []time.Duration{301 * time.Second, 11 * time.Second, time.Hour} {
		c.Add(step)
		if _, err := v.Verify(t.Context(), mint(t, es, validClaims(c.Now()), nil)); err != nil {
			t.Errorf("Verify with issuer down (cache stale) = %v; want cached key used", err)
		}
	}
	if n := srv.requests.Load(); n != 4 {
		t.Errorf("requests = %d; want 4 (one per stale period)", n)
	}
}

func TestRemoteFirstFetchFails(t *testing.T) {
	es, _, _ := fixedKeys(t)
	c := newClock()
	srv := newJWKSServer(t, es)
	srv.set(func(s *jwksServer) { s.down = true })
	_, v := newRemote(t, srv, c)
	_, err := v.Verify(t.Context(), mint(t, es, validClaims(c.Now()), nil))
	if !errors.Is(err, verify.ErrInvalidToken) {
		t.Fatalf("Verify with no JWKS = %v; want ErrInvalidToken", err)
	}
	srv.set(func(s *jwksServer) { s.down = false })
	c.Add(10 * time.Second)
	if _, err := v.Verify(t.Context(), mint(t, es, validClaims(c.Now()), nil)); err != nil {
		t.Errorf("Verify after the issuer recovered = %v", err)
	}
}

func TestRemoteBogusKidFlood(t *testing.T) {
	es, _, _ := fixedKeys(t)
	c := newClock()
	srv := newJWKSServer(t, es)
	_, v := newRemote(t, srv, c)
	// 25 fake seconds, 40 bogus tokens per second from concurrent clients.
	for sec := range 25 {
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Go(func() {
				tok := mint(t, testKey{fmt.Sprintf("bogus-%d-%d", sec, i), verify.ES256, es.priv}, validClaims(c.Now()), nil)
				if _, err := v.Verify(t.Context(), tok); !errors.Is(err, verify.ErrUnknownKey) {
					t.Errorf("bogus kid: %v", err)
				}
			})
		}
		wg.Wait()
		c.Add(time.Second)
	}
	// Fetches at t=0s, 10s, 20s only.
	if n := srv.requests.Load(); n != 3 {
		t.Errorf("requests = %d; want 3 (one per MinRefresh)", n)
	}
}

func TestRemoteCacheLifetime(t *testing.T) {
	es, _, _ := fixedKeys(t)
	tests := []struct {
		name         string
		cacheControl string
		fresh, stale time.Duration // still cached at fresh; refetched at stale
	}{
		{"max-age honoured", "public, max-age=120", 119 * time.Second, 121 * time.Second},
		{"at least one minute", "max-age=0", 59 * time.Second, 61 * time.Second},
		{"capped by MaxAge", "max-age=86400", 59 * time.Minute, 61 * time.Minute},
		{"no header: MaxAge", "", 59 * time.Minute, 61 * time.Minute},
		{"no-store: one minute", "no-store", 59 * time.Second, 61 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			srv := newJWKSServer(t, es)
			srv.set(func(s *jwksServer) { s.cacheControl = tc.cacheControl })
			ks, _ := newRemote(t, srv, c)
			key := func() {
				if _, _, err := ks.Key(t.Context(), es.kid); err != nil {
					t.Fatal(err)
				}
			}
			key()
			c.Add(tc.fresh)
			key()
			if n := srv.requests.Load(); n != 1 {
				t.Errorf("requests after %v = %d; want 1", tc.fresh, n)
			}
			c.Add(tc.stale - tc.fresh)
			key()
			if n := srv.requests.Load(); n != 2 {
				t.Errorf("requests after %v = %d; want 2", tc.stale, n)
			}
		})
	}
}

func TestParseJWKSSkipsUnusableKeys(t *testing.T) {
	es, _, _ := fixedKeys(t)
	c := newClock()
	srv := newJWKSServer(t, es)
	j, _ := jwk.FromRaw(es.pub())
	b, _ := json.Marshal(j)
	var noAlg map[string]any
	json.Unmarshal(b, &noAlg)
	noAlg["kid"] = "no-alg"
	encUse := map[string]any{}
	for k, v := range noAlg {
		encUse[k] = v
	}
	encUse["kid"], encUse["alg"], encUse["use"] = "enc-use", "ES256", "enc"
	rsAlgOnEC := map[string]any{}
	for k, v := range noAlg {
		rsAlgOnEC[k] = v
	}
	rsAlgOnEC["kid"], rsAlgOnEC["alg"] = "rs-on-ec", "RS256"
	srv.set(func(s *jwksServer) {
		s.extra = []map[string]any{
			noAlg, encUse, rsAlgOnEC,
			{"kty": "oct", "k": "c2VjcmV0", "kid": "hmac", "alg": "HS256"},
		}
	})
	ks, _ := newRemote(t, srv, c)
	if _, alg, err := ks.Key(t.Context(), es.kid); err != nil || alg != verify.ES256 {
		t.Fatalf("Key(good) = %q, %v", alg, err)
	}
	for _, kid := range []string{"no-alg", "enc-use", "rs-on-ec", "hmac"} {
		if _, _, err := ks.Key(t.Context(), kid); !errors.Is(err, verify.ErrUnknownKey) {
			t.Errorf("Key(%s) = %v; want ErrUnknownKey (skipped)", kid, err)
		}
	}
}

// TestFetchJWKSFollowsNoRedirect: a JWKS URL that redirects, even to a
// server publishing the right keys, yields no keys, and the error says
// redirects are not followed, whatever the client's own CheckRedirect.
func TestFetchJWKSFollowsNoRedirect(t *testing.T) {
	es, _, _ := fixedKeys(t)
	keys := newJWKSServer(t, es)
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		redir := httptest.NewServer(http.RedirectHandler(keys.URL, code))
		body, _, err := verify.FetchJWKS(t.Context(), http.DefaultClient, redir.URL)
		redir.Close()
		if err == nil || !strings.Contains(err.Error(), "redirects are not followed") {
			t.Errorf("FetchJWKS through a %d = %q, %v; want the redirect refused", code, body, err)
		}
	}
	if n := keys.requests.Load(); n != 0 {
		t.Errorf("the redirect's target was fetched %d times; want never", n)
	}
	if _, _, err := verify.FetchJWKS(t.Context(), http.DefaultClient, keys.URL); err != nil {
		t.Errorf("FetchJWKS of the keys' own URL = %v", err)
	}
}
