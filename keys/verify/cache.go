package verify

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Defaults of the verified-token cache (see [Config]).
const (
	// DefaultCacheEntries is how many verified tokens a [Verifier] keeps.
	// A client reuses one access token for up to 30 minutes; 32,768
	// entries hold every token of 32,768 clients that each call at least
	// once per token lifetime.
	DefaultCacheEntries = 32768
	// DefaultCacheBytes bounds the memory the cache accounts for (see
	// [CacheStats.Bytes]); an oauthd access token's entry accounts for
	// about 670 bytes, so for oauthd's tokens the entry bound comes first
	// (32,768 entries ≈ 21 MiB).
	DefaultCacheBytes = 32 << 20
)

// cacheShards is the number of independently locked parts of the cache
// (fewer for a small cache, so that each part holds at least 64 entries).
const cacheShards = 32

// entryOverhead is what an entry costs besides its strings: the entry
// (with its Claims), the map's key and slot, the ring's pointer, and the
// slack of size classes and of the map's growth (an oauthd access
// token's entry takes ~650 bytes of heap, and is accounted ~670).
const entryOverhead = int(unsafe.Sizeof(cacheEntry{})) + sha256.Size + 16 + 8 + 96

// tokenCache holds the results of successful verifications, keyed by the
// SHA-256 of the whole token (a token that differs in any byte is another
// key). It is a small sharded map rather than a library cache because what
// it must do is specific: an entry is served only while the injected clock
// is inside the token's validity, only while the key source still
// publishes the very key that verified it, and can be dropped by a
// predicate on its claims (grant revocation); the bound is a fixed number
// of entries and of bytes, with first-in first-out eviction, which for
// tokens of one fixed lifetime is also soonest-expiring first.
type tokenCache struct {
	shards []cacheShard
	mask   uint8
}

type cacheShard struct {
	mu       sync.Mutex
	m        map[[sha256.Size]byte]*cacheEntry // guarded by mu
	ring     []*cacheEntry                     // insertion order, nil for a hole; guarded by mu
	head     int                               // next slot of ring to fill; guarded by mu
	bytes    int                               // accounted size of the entries; guarded by mu
	maxBytes int

	hits, misses, evictions, drops atomic.Uint64

	_ [64]byte // keep neighbouring shards' counters off this cache line
}

// cacheEntry is one verified token.
type cacheEntry struct {
	key    [sha256.Size]byte
	claims Claims
	kid    string
	alg    string
	pub    crypto.PublicKey
	// The entry answers while notBefore <= now < notAfter: notBefore is
	// the latest of iat and nbf less the leeway (as the verifier checks
	// them), notAfter is exp itself. Past exp the full check decides,
	// with its leeway, every time.
	notBefore, notAfter time.Time
	size                int
	slot                int
}

func newTokenCache(entries, bytes int) *tokenCache {
	n := cacheShards
	for n > 1 && entries/n < 64 {
		n /= 2
	}
	c := &tokenCache{shards: make([]cacheShard, n), mask: uint8(n - 1)}
	per := (entries + n - 1) / n
	for i := range c.shards {
		c.shards[i].m = make(map[[sha256.Size]byte]*cacheEntry)
		c.shards[i].ring = make([]*cacheEntry, per)
		c.shards[i].maxBytes = bytes / n
	}
	return c
}

// tokenKey is the SHA-256 of the whole token.
func tokenKey(token string) [sha256.Size]byte {
	// The hash only reads the bytes: no copy of the token.
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(token), len(token)))
}

func (c *tokenCache) shard(k *[sha256.Size]byte) *cacheShard {
	return &c.shards[k[0]&c.mask]
}

// get returns a copy of the claims cached under k if the entry is valid
// at now and keys still gives the entry's kid the same key and alg. An
// entry found invalid is dropped.
func (c *tokenCache) get(ctx context.Context, k *[sha256.Size]byte, now time.Time, keys KeySource) (*Claims, bool) {
	s := c.shard(k)
	s.mu.Lock()
	e := s.m[*k]
	if e == nil {
		s.mu.Unlock()
		s.misses.Add(1)
		return nil, false
	}
	if now.Before(e.notBefore) || !now.Before(e.notAfter) {
		if !now.Before(e.notAfter) {
			s.remove(e)
			s.drops.Add(1)
		}
		s.mu.Unlock()
		s.misses.Add(1)
		return nil, false
	}
	out := e.claims
	kid, alg, pub := e.kid, e.alg, e.pub
	s.mu.Unlock()
	// The caller's own copy, slices included: a handler that changes its
	// claims must not change another request's.
	out.Audience = slices.Clone(out.Audience)
	out.Scopes = slices.Clone(out.Scopes)

	// The key source is asked outside the lock: a RemoteKeySet may fetch.
	cur, curAlg, err := keys.Key(ctx, kid)
	if err != nil || curAlg != alg || !sameKey(cur, pub) {
		s.mu.Lock()
		if s.m[*k] == e {
			s.remove(e)
			s.drops.Add(1)
		}
		s.mu.Unlock()
		s.misses.Add(1)
		return nil, false
	}
	s.hits.Add(1)
	return &out, true
}

// put caches claims c of the token keyed k, verified with pub (alg) under
// kid, unless the entry would already be out of its window at now.
func (c *tokenCache) put(k *[sha256.Size]byte, cl *Claims, kid, alg string, pub crypto.PublicKey, leeway time.Duration, now time.Time) {
	e := &cacheEntry{key: *k, claims: *cl, kid: kid, alg: alg, pub: pub, notAfter: cl.ExpiresAt}
	e.claims.Audience = slices.Clone(cl.Audience) // cl is the caller's
	e.claims.Scopes = slices.Clone(cl.Scopes)
	nb := cl.IssuedAt
	if cl.NotBefore.After(nb) {
		nb = cl.NotBefore
	}
	if !nb.IsZero() {
		e.notBefore = nb.Add(-leeway)
	}
	if cl.ExpiresAt.IsZero() || !now.Before(e.notAfter) {
		return
	}
	e.size = entrySize(e)
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.m[*k]; old != nil {
		s.remove(old)
	}
	if e.size > s.maxBytes {
		return
	}
	for s.bytes+e.size > s.maxBytes && s.evictOldest() {
	}
	if old := s.ring[s.head]; old != nil {
		s.remove(old)
		s.evictions.Add(1)
	}
	e.slot = s.head
	s.ring[s.head] = e
	s.head = (s.head + 1) % len(s.ring)
	s.m[*k] = e
	s.bytes += e.size
}

// evictOldest removes the oldest entry of s; false when s is empty.
func (s *cacheShard) evictOldest() bool {
	for i := range s.ring {
		if e := s.ring[(s.head+i)%len(s.ring)]; e != nil {
			s.remove(e)
			s.evictions.Add(1)
			return true
		}
	}
	return false
}

// remove takes e out of s; s.mu is held.
func (s *cacheShard) remove(e *cacheEntry) {
	delete(s.m, e.key)
	s.ring[e.slot] = nil
	s.bytes -= e.size
}

// drop removes every entry whose claims match; it returns how many.
func (c *tokenCache) drop(match func(*Claims) bool) int {
	total := 0
	for i := range c.shards {
		s := &c.shards[i]
		n := 0
		s.mu.Lock()
		for _, e := range s.m {
			if match(&e.claims) {
				s.remove(e)
				n++
			}
		}
		s.mu.Unlock()
		s.drops.Add(uint64(n))
		total += n
	}
	return total
}

func (c *tokenCache) stats() CacheStats {
	var st CacheStats
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		st.Entries += len(s.m)
		st.Bytes += s.bytes
		st.MaxEntries += len(s.ring)
		st.MaxBytes += s.maxBytes
		s.mu.Unlock()
		st.Hits += s.hits.Load()
		st.Misses += s.misses.Load()
		st.Evictions += s.evictions.Load()
		st.Drops += s.drops.Load()
	}
	return st
}

// entrySize is the accounted size of e: the fixed overhead and the bytes
// of its strings.
func entrySize(e *cacheEntry) int {
	const strHdr = int(unsafe.Sizeof(""))
	n := entryOverhead + len(e.kid) + len(e.claims.Issuer) + len(e.claims.Subject) + len(e.claims.ClientID) + len(e.claims.ID)
	for _, a := range e.claims.Audience {
		n += strHdr + len(a)
	}
	for _, sc := range e.claims.Scopes {
		n += strHdr + len(sc)
	}
	return n
}

// sameKey reports whether a and b are the same public key.
func sameKey(a, b crypto.PublicKey) bool {
	switch x := a.(type) {
	case *ecdsa.PublicKey:
		y, ok := b.(*ecdsa.PublicKey)
		return ok && (x == y || x.Equal(y))
	case *rsa.PublicKey:
		y, ok := b.(*rsa.PublicKey)
		return ok && (x == y || x.Equal(y))
	case ed25519.PublicKey:
		return x.Equal(b)
	}
	return false
}

// CacheStats describes a [Verifier]'s verified-token cache.
type CacheStats struct {
	Entries, MaxEntries int
	// Bytes is the accounted size of the entries: a fixed overhead per
	// entry plus the bytes of its claims' strings.
	Bytes, MaxBytes int
	// Hits are tokens answered from the cache; Misses the lookups that
	// went on to the full check (not cached, outside the entry's window,
	// or its key no longer published).
	Hits, Misses uint64
	// Evictions are entries removed to make room; Drops entries removed
	// because they expired, their key left the key source, or
	// [Verifier.DropCached] matched them.
	Evictions, Drops uint64
}
