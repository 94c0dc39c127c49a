package verify_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"oauthd/keys/verify"
)

// mutableKeys is a KeySource whose keys a test changes while it runs, as
// keys.Manager's change after `oauthd keys revoke`.
type mutableKeys struct {
	mu sync.Mutex
	m  map[string]testKey
}

func newMutableKeys(ks ...testKey) *mutableKeys {
	m := &mutableKeys{m: map[string]testKey{}}
	for _, k := range ks {
		m.m[k.kid] = k
	}
	return m
}

func (s *mutableKeys) Key(_ context.Context, kid string) (crypto.PublicKey, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.m[kid]
	if !ok {
		return nil, "", fmt.Errorf("kid %q: %w", kid, verify.ErrUnknownKey)
	}
	return k.pub(), k.alg, nil
}

func (s *mutableKeys) set(k testKey)  { s.mu.Lock(); s.m[k.kid] = k; s.mu.Unlock() }
func (s *mutableKeys) del(kid string) { s.mu.Lock(); delete(s.m, kid); s.mu.Unlock() }

// verifyTwice verifies tok once to fill the cache and once more, and
// checks that the second answer came from the cache.
func verifyTwice(t *testing.T, v *verify.Verifier, tok string) *verify.Claims {
	t.Helper()
	if _, err := v.Verify(t.Context(), tok); err != nil {
		t.Fatalf("first Verify = %v", err)
	}
	before := v.CacheStats().Hits
	c, err := v.Verify(t.Context(), tok)
	if err != nil {
		t.Fatalf("second Verify = %v", err)
	}
	if got := v.CacheStats().Hits; got != before+1 {
		t.Fatalf("second Verify was not a cache hit (hits %d → %d)", before, got)
	}
	return c
}

func TestCacheServesSameClaims(t *testing.T) {
	es, _, _ := fixedKeys(t)
	c := newClock()
	v, _ := verify.New(verify.Config{Issuer: issuer, Keys: staticKeys{es.kid: es}, Now: c.Now})
	tok := mint(t, es, validClaims(c.Now()), nil)
	first, err := v.Verify(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	got := verifyTwice(t, v, tok)
	if fmt.Sprint(*got) != fmt.Sprint(*first) {
		t.Errorf("cached claims %+v; want %+v", *got, *first)
	}
	// A caller that changes its claims does not change the next caller's.
	got.Unrestricted, got.Subject = true, "1"
	got.Scopes[0] = "ORG_MEMBERSHIP_WRITE"
	got.Scopes = append(got.Scopes, "ORG_MEMBERSHIP_WRITE")
	got.Audience[0] = "https://elsewhere.test"
	first.Scopes[1] = "ORG_BOOKING_WRITE" // the first caller's copy, too
	again, err := v.Verify(t.Context(), tok)
	if err != nil || again.Unrestricted || again.Subject != "42" || strings.Join(again.Scopes, " ") != "BOOKING_READ PROFILE_READ" ||
		again.Audience[0] != issuer {
		t.Errorf("after callers changed their copies: %+v, %v", again, err)
	}
	if st := v.CacheStats(); st.Entries != 1 || st.MaxEntries < verify.DefaultCacheEntries || st.Bytes <= 0 || st.Bytes > 2048 {
		t.Errorf("CacheStats = %+v; want 1 entry of a few hundred bytes", st)
	}
}

// TestCacheKeyRevoked: a cached token stops verifying as soon as its kid
// leaves the key source, and a kid that comes back with another key does
// not revive it.
func TestCacheKeyRevoked(t *testing.T) {
	es, _, _ := fixedKeys(t)
	c := newClock()
	ks := newMutableKeys(es)
	v, _ := verify.New(verify.Config{Issuer: issuer, Keys: ks, Now: c.Now})
	tok := mint(t, es, validClaims(c.Now()), nil)
	verifyTwice(t, v, tok)

	ks.del(es.kid)
	_, err := v.Verify(t.Context(), tok)
	if !errors.Is(err, verify.ErrUnknownKey) || !errors.Is(err, verify.ErrInvalidToken) {
		t.Fatalf("Verify after the kid left = %v; want ErrInvalidToken and ErrUnknownKey", err)
	}
	if st := v.CacheStats(); st.Entries != 0 || st.Drops != 1 {
		t.Errorf("CacheStats = %+v; want the entry dropped", st)
	}

	// Cached again, then the kid is published with another key.
	ks.set(es)
	verifyTwice(t, v, tok)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ks.set(testKey{es.kid, verify.ES256, other})
	if _, err := v.Verify(t.Context(), tok); err == nil || !errors.Is(err, verify.ErrInvalidToken) {
		t.Fatalf("Verify with the kid now naming another key = %v; want a bad signature", err)
	}
	// A kid whose key now has another alg.
	ks.set(es)
	verifyTwice(t, v, tok)
	_, ed, _ := fixedKeys(t)
	ks.set(testKey{es.kid, verify.EdDSA, ed.priv})
	if _, err := v.Verify(t.Context(), tok); err == nil {
		t.Fatal("Verify with the kid now an EdDSA key succeeded")
	}
}

// TestCacheRemoteKeyRevoked: through a RemoteKeySet the kid leaves with
// the next fetch of the JWKS, and the cached token with it.
func TestCacheRemoteKeyRevoked(t *testing.T) {
	es, _, _ := fixedKeys(t)
	var published atomic.Bool
	published.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		set := jwk.NewSet()
		if published.Load() {
			k, _ := jwk.FromRaw(es.pub())
			k.Set(jwk.KeyIDKey, es.kid)
			k.Set(jwk.AlgorithmKey, jwa.ES256)
			set.AddKey(k)
		}
		w.Header().Set("Cache-Control", "max-age=60")
		b, _ := json.Marshal(set)
		w.Write(b)
	}))
	defer srv.Close()
	c := newClock()
	ks := verify.NewRemoteKeySet(verify.RemoteConfig{URL: srv.URL, Now: c.Now})
	v, _ := verify.New(verify.Config{Issuer: issuer, Keys: ks, Now: c.Now})
	tok := mint(t, es, validClaims(c.Now()), nil)
	verifyTwice(t, v, tok)

	published.Store(false) // the issuer revokes the key
	c.Add(30 * time.Second)
	verifyTwice(t, v, tok) // the JWKS the gateway holds is still fresh
	c.Add(31 * time.Second)
	if _, err := v.Verify(t.Context(), tok); !errors.Is(err, verify.ErrUnknownKey) {
		t.Fatalf("Verify after the JWKS was refetched without the kid = %v; want ErrUnknownKey", err)
	}
	if st := v.CacheStats(); st.Entries != 0 {
		t.Errorf("CacheStats = %+v; want the entry dropped", st)
	}
}

// TestCacheNeverOutlivesTheFullCheck compares a cached and an uncached
// verifier on the same tokens at instants around every boundary of their
// validity (exp, nbf, iat, each with and without leeway), after the
// cached one has seen each token at a valid instant: they must agree at
// every instant.
func TestCacheNeverOutlivesTheFullCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: many full verifications")
	}
	es, _, _ := fixedKeys(t)
	for _, leeway := range []time.Duration{-1, time.Second, verify.DefaultLeeway} {
		t.Run("leeway "+leeway.String(), func(t *testing.T) {
			c := newClock()
			ks := staticKeys{es.kid: es}
			cached, _ := verify.New(verify.Config{Issuer: issuer, Keys: ks, Now: c.Now, Leeway: leeway})
			plain, _ := verify.New(verify.Config{Issuer: issuer, Keys: ks, Now: c.Now, Leeway: leeway, CacheEntries: -1})
			now := c.Now()
			type tokCase struct {
				name string
				tok  string
			}
			toks := []tokCase{
				{"plain", mint(t, es, validClaims(now), nil)},
				{"nbf ahead", mint(t, es, with(validClaims(now), "nbf", now.Add(10*time.Second).Unix()), nil)},
				{"iat ahead", mint(t, es, with(validClaims(now), "iat", now.Add(5*time.Second).Unix()), nil)},
				{"no iat", mint(t, es, with(validClaims(now), "iat", nil), nil)},
				{"short exp", mint(t, es, with(validClaims(now), "exp", now.Add(20*time.Second).Unix()), nil)},
				{"fractional exp", mint(t, es, with(validClaims(now), "exp", float64(now.Add(20*time.Second).UnixMilli())/1000+0.25), nil)},
			}
			var offsets []time.Duration
			for _, b := range []time.Duration{0, 5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Minute} {
				for _, l := range []time.Duration{0, time.Second, verify.DefaultLeeway} {
					for _, d := range []time.Duration{-time.Nanosecond, 0, time.Nanosecond, 250 * time.Millisecond} {
						offsets = append(offsets, b+l+d, b-l+d)
					}
				}
			}
			for _, tc := range toks {
				t.Run(tc.name, func(t *testing.T) {
					warmed := false
					for _, off := range offsets {
						c.mu.Lock()
						c.t = now.Add(off)
						c.mu.Unlock()
						_, errPlain := plain.Verify(t.Context(), tc.tok)
						_, errCached := cached.Verify(t.Context(), tc.tok)
						if (errPlain == nil) != (errCached == nil) {
							t.Errorf("at %s: uncached %v, cached %v", off, errPlain, errCached)
						}
						warmed = warmed || errPlain == nil
					}
					if !warmed {
						t.Fatal("the token was never valid: the case tests nothing")
					}
				})
			}
			if st := cached.CacheStats(); st.Hits == 0 {
				t.Errorf("no cache hit in the whole sweep: %+v", st)
			}
		})
	}
}

// TestCacheExpiry: a cached token is refused from its exp plus leeway
// on, exactly as uncached, and never served from the cache at or past exp.
func TestCacheExpiry(t *testing.T) {
	es, _, _ := fixedKeys(t)
	c := newClock()
	v, _ := verify.New(verify.Config{Issuer: issuer, Keys: staticKeys{es.kid: es}, Now: c.Now, Leeway: -1})
	tok := mint(t, es, validClaims(c.Now()), nil)
	verifyTwice(t, v, tok)
	c.Add(30*time.Minute - time.Nanosecond)
	verifyTwice(t, v, tok)
	c.Add(time.Nanosecond) // exactly exp
	if _, err := v.Verify(t.Context(), tok); err == nil {
		t.Fatal("Verify at exp (no leeway) succeeded")
	}
	if st := v.CacheStats(); st.Entries != 0 {
		t.Errorf("CacheStats = %+v; want the expired entry gone", st)
	}

	// With the default leeway the full check still accepts the token for
	// 60 s past exp, and the cache does not answer for it then.
	v2, _ := verify.New(verify.Config{Issuer: issuer, Keys: staticKeys{es.kid: es}, Now: c.Now})
	tok2 := mint(t, es, with(validClaims(c.Now()), "exp", c.Now().Add(time.Minute).Unix()), nil)
	verifyTwice(t, v2, tok2)
	c.Add(time.Minute + 30*time.Second)
	hits := v2.CacheStats().Hits
	if _, err := v2.Verify(t.Context(), tok2); err != nil {
		t.Fatalf("Verify 30 s past exp, within the leeway = %v", err)
	}
	if v2.CacheStats().Hits != hits {
		t.Error("a token past its exp was served from the cache")
	}
	c.Add(30 * time.Second)
	if _, err := v2.Verify(t.Context(), tok2); err == nil {
		t.Fatal("Verify at exp + leeway succeeded")
	}
}

// TestCacheTamperedVariants: no token that differs from a cached one in
// any way verifies because of the cached one.
func TestCacheTamperedVariants(t *testing.T) {
	es, _, _ := fixedKeys(t)
	c := newClock()
	v, _ := verify.New(verify.Config{Issuer: issuer, Keys: staticKeys{es.kid: es}, Now: c.Now})
	tok := mint(t, es, validClaims(c.Now()), nil)
	verifyTwice(t, v, tok)
	variants := []string{tok + "A", tok[:len(tok)-1], "A" + tok, tok + ".", tok[1:]}
	for i := range len(tok) {
		b := []byte(tok)
		switch b[i] {
		case '.':
			continue
		case 'A':
			b[i] = 'B'
		default:
			b[i] = 'A'
		}
		variants = append(variants, string(b))
	}
	for _, bad := range variants {
		if _, err := v.Verify(t.Context(), bad); err == nil {
			t.Fatalf("a variant of the cached token verified: %q", bad)
		}
	}
	if st := v.CacheStats(); st.Entries != 1 {
		t.Errorf("CacheStats = %+v; want only the real token cached", st)
	}
	verifyTwice(t, v, tok)
}

// TestCacheNoNegativeCaching: a token refused once (its key not yet
// published, or not yet valid) verifies as soon as it is valid: a refusal
// is never remembered.
func TestCacheNoNegativeCaching(t *testing.T) {
	es, _, _ := fixedKeys(t)
	c := newClock()
	ks := newMutableKeys()
	v, _ := verify.New(verify.Config{Issuer: issuer, Keys: ks, Now: c.Now})
	tok := mint(t, es, validClaims(c.Now()), nil)
	early := mint(t, es, with(validClaims(c.Now()), "nbf", c.Now().Add(2*time.Minute).Unix()), nil)
	for range 3 {
		if _, err := v.Verify(t.Context(), tok); err == nil {
			t.Fatal("Verify with an unknown kid succeeded")
		}
	}
	ks.set(es)
	for range 3 {
		if _, err := v.Verify(t.Context(), early); err == nil {
			t.Fatal("Verify before nbf succeeded")
		}
	}
	if st := v.CacheStats(); st.Entries != 0 {
		t.Fatalf("CacheStats = %+v; a refused token was cached", st)
	}
	verifyTwice(t, v, tok)
	c.Add(time.Minute + time.Second)
	verifyTwice(t, v, early)
}

// TestCacheBounds: the cache holds at most its entries and bytes, and a
// token that was evicted still verifies (by the full check).
func TestCacheBounds(t *testing.T) {
	es, _, _ := fixedKeys(t)
	c := newClock()
	v, _ := verify.New(verify.Config{Issuer: issuer, Keys: staticKeys{es.kid: es}, Now: c.Now, CacheEntries: 100})
	var toks []string
	for i := range 400 {
		toks = append(toks, mint(t, es, with(validClaims(c.Now()), "jti", "j"+strconv.Itoa(i)), nil))
	}
	for _, tok := range toks {
		if _, err := v.Verify(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
	}
	st := v.CacheStats()
	if st.Entries > st.MaxEntries || st.MaxEntries > 128 || st.Entries < 50 || st.Evictions == 0 {
		t.Errorf("CacheStats = %+v; want at most ~100 entries and evictions", st)
	}
	if _, err := v.Verify(t.Context(), toks[0]); err != nil {
		t.Errorf("evicted token: %v", err)
	}

	// The byte bound: room for about ten entries.
	vb, _ := verify.New(verify.Config{Issuer: issuer, Keys: staticKeys{es.kid: es}, Now: c.Now, CacheEntries: 1000, CacheBytes: 10 * 700})
	for _, tok := range toks {
		if _, err := vb.Verify(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
	}
	if st := vb.CacheStats(); st.Bytes > st.MaxBytes || st.Entries == 0 || st.Entries > 12 {
		t.Errorf("CacheStats = %+v; want at most MaxBytes", st)
	}
}

func TestCacheDropAndOff(t *testing.T) {
	es, _, _ := fixedKeys(t)
	c := newClock()
	v, _ := verify.New(verify.Config{Issuer: issuer, Keys: staticKeys{es.kid: es}, Now: c.Now})
	a := mint(t, es, validClaims(c.Now()), nil)
	b := mint(t, es, with(validClaims(c.Now()), "client_id", "client-2"), nil)
	verifyTwice(t, v, a)
	verifyTwice(t, v, b)
	if n := v.DropCached(func(c *verify.Claims) bool { return c.ClientID == "client-2" }); n != 1 {
		t.Fatalf("DropCached = %d; want 1", n)
	}
	hits := v.CacheStats().Hits
	v.Verify(t.Context(), b)
	v.Verify(t.Context(), a)
	if got := v.CacheStats().Hits; got != hits+1 {
		t.Errorf("hits %d → %d; want only the token that was not dropped served from the cache", hits, got)
	}

	off, _ := verify.New(verify.Config{Issuer: issuer, Keys: staticKeys{es.kid: es}, Now: c.Now, CacheEntries: -1})
	for range 2 {
		if _, err := off.Verify(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	}
	if st := off.CacheStats(); st != (verify.CacheStats{}) || off.DropCached(func(*verify.Claims) bool { return true }) != 0 {
		t.Errorf("cache off: %+v", st)
	}
}

// TestCacheConcurrent runs many goroutines over a few tokens while the
// key is revoked: under the race detector, and no success after the
// revocation returned.
func TestCacheConcurrent(t *testing.T) {
	es, _, _ := fixedKeys(t)
	c := newClock()
	ks := newMutableKeys(es)
	v, _ := verify.New(verify.Config{Issuer: issuer, Keys: ks, Now: c.Now, CacheEntries: 64})
	var toks []string
	for i := range 8 {
		toks = append(toks, mint(t, es, with(validClaims(c.Now()), "jti", "j"+strconv.Itoa(i)), nil))
	}
	var revoked atomic.Bool
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				wasRevoked := revoked.Load()
				_, err := v.Verify(t.Context(), toks[(g+i)%len(toks)])
				if wasRevoked && err == nil {
					t.Error("a token verified after its key was revoked")
					return
				}
				if err != nil && !errors.Is(err, verify.ErrUnknownKey) {
					t.Errorf("Verify = %v; want success, or ErrUnknownKey once the key is revoked", err)
					return
				}
			}
		})
	}
	time.Sleep(5 * time.Millisecond)
	ks.del(es.kid)
	revoked.Store(true)
	wg.Wait()
}
