package verify

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"
)

// Defaults of [RemoteConfig].
const (
	DefaultMinRefresh = 10 * time.Second
	DefaultMaxAge     = time.Hour
	// MinCacheAge is the shortest time a fetched JWKS is kept, whatever
	// its Cache-Control says.
	MinCacheAge   = time.Minute
	maxJWKSBytes  = 1 << 20
	fetchTimeout  = 10 * time.Second
	maxKIDInError = 64
)

// RemoteConfig configures a [RemoteKeySet].
type RemoteConfig struct {
	// URL of the issuer's JWKS, e.g. https://api.example.com/.well-known/jwks.json.
	URL string
	// Client fetches the JWKS. Default: an http.Client with a 10s timeout.
	Client *http.Client
	// MinRefresh is the shortest time between two fetches, whatever the
	// reason (stale cache, unknown kid): a flood of tokens with bogus kids
	// cannot make the key set hammer the issuer. Default 10s.
	MinRefresh time.Duration
	// MaxAge caps how long a fetched JWKS is used before it is refetched.
	// The response's Cache-Control max-age is honoured below that cap, but
	// never below [MinCacheAge]. Default 1h.
	MaxAge time.Duration
	// Logger logs failed fetches. Default: discard.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// RemoteKeySet is a [KeySource] over an issuer's JWKS fetched by HTTP and
// cached. When the issuer cannot be reached it keeps serving the keys it
// has. It is safe for concurrent use.
type RemoteKeySet struct {
	cfg   RemoteConfig
	cache atomic.Pointer[remoteKeys]

	mu          sync.Mutex
	lastAttempt time.Time // start of the last fetch; guarded by mu
	inflight    *flight   // the fetch under way, or nil; guarded by mu
}

// flight is one fetch that every concurrent caller waits for.
type flight struct {
	done chan struct{}
	err  error // set before done is closed
}

type remoteKey struct {
	key crypto.PublicKey
	alg string
}

type remoteKeys struct {
	byKID   map[string]remoteKey
	expires time.Time
}

// NewRemoteKeySet returns a key set that fetches cfg.URL when first asked.
func NewRemoteKeySet(cfg RemoteConfig) *RemoteKeySet {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: fetchTimeout, Transport: TracedTransport("fetch JWKS")}
	}
	if cfg.MinRefresh <= 0 {
		cfg.MinRefresh = DefaultMinRefresh
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.MaxAge < MinCacheAge {
		cfg.MaxAge = MinCacheAge
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &RemoteKeySet{cfg: cfg}
}

var _ KeySource = (*RemoteKeySet)(nil)

// Key implements [KeySource]. It answers from the cache while the cache is
// fresh and knows kid. Otherwise (stale cache, unknown kid) it joins the
// fetch under way or starts one, but starts at most one fetch per
// MinRefresh; when the issuer is unreachable it answers from the keys it
// has. An unknown kid gives an error wrapping [ErrUnknownKey].
func (s *RemoteKeySet) Key(ctx context.Context, kid string) (crypto.PublicKey, string, error) {
	cur := s.cache.Load()
	if cur != nil && s.cfg.Now().Before(cur.expires) {
		if k, ok := cur.byKID[kid]; ok {
			return k.key, k.alg, nil
		}
	}
	if f := s.startOrJoin(ctx, false); f != nil {
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, "", ctx.Err()
		}
		cur = s.cache.Load()
		if cur == nil {
			return nil, "", fmt.Errorf("fetch jwks: %w", f.err)
		}
	}
	if cur == nil {
		return nil, "", fmt.Errorf("no jwks fetched yet from %s: %w", s.cfg.URL, ErrUnknownKey)
	}
	if k, ok := cur.byKID[kid]; ok {
		return k.key, k.alg, nil
	}
	return nil, "", fmt.Errorf("kid %q: %w", truncate(kid, maxKIDInError), ErrUnknownKey)
}

// Refresh fetches the JWKS now (or waits for the fetch under way),
// ignoring MinRefresh. A resource server may call it at start so the
// first token does not wait.
func (s *RemoteKeySet) Refresh(ctx context.Context) error {
	f := s.startOrJoin(ctx, true)
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startOrJoin returns the fetch under way, or starts one unless the last
// one started less than MinRefresh ago (and force is false), in which case
// it returns nil. The fetch outlives a caller that gives up: it runs
// without that caller's cancellation, bounded by fetchTimeout.
func (s *RemoteKeySet) startOrJoin(ctx context.Context, force bool) *flight {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight != nil {
		return s.inflight
	}
	now := s.cfg.Now()
	if !force && !s.lastAttempt.IsZero() && now.Sub(s.lastAttempt) < s.cfg.MinRefresh {
		return nil
	}
	s.lastAttempt = now
	f := &flight{done: make(chan struct{})}
	s.inflight = f
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	go func() {
		defer cancel()
		err := s.fetch(fctx)
		if err != nil {
			s.cfg.Logger.WarnContext(fctx, "jwks fetch failed; keeping cached keys", "url", s.cfg.URL, "err", err)
		}
		s.mu.Lock()
		s.inflight = nil
		s.mu.Unlock()
		f.err = err
		close(f.done)
	}()
	return f
}

func (s *RemoteKeySet) fetch(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.URL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", s.cfg.URL, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", s.cfg.URL, err)
	}
	if len(body) > maxJWKSBytes {
		return fmt.Errorf("GET %s: JWKS larger than %d bytes", s.cfg.URL, maxJWKSBytes)
	}
	byKID, err := ParseJWKS(body, func(kid string, err error) {
		s.cfg.Logger.WarnContext(ctx, "jwks key skipped", "kid", truncate(kid, maxKIDInError), "err", err)
	})
	if err != nil {
		return fmt.Errorf("GET %s: %w", s.cfg.URL, err)
	}
	m := make(map[string]remoteKey, len(byKID))
	for kid, k := range byKID {
		m[kid] = remoteKey{key: k.Key, alg: k.Alg}
	}
	age := s.cfg.MaxAge
	if ma, ok := maxAge(resp.Header.Get("Cache-Control")); ok && ma < age {
		age = max(ma, MinCacheAge)
	}
	s.cache.Store(&remoteKeys{byKID: m, expires: s.cfg.Now().Add(age)})
	return nil
}

// PublicKey is one usable key of a JWKS.
type PublicKey struct {
	Key crypto.PublicKey // *ecdsa.PublicKey, ed25519.PublicKey or *rsa.PublicKey
	Alg string           // ES256, EdDSA or RS256
}

// ParseJWKS parses a JWKS (RFC 7517 §5) into its usable verification keys
// by kid. A key without kid or alg, with an alg not accepted, with "use"
// other than "sig", or whose type does not fit its alg is skipped and
// reported to skip (which may be nil). Private members are ignored: only
// the public part of a key is kept.
func ParseJWKS(b []byte, skip func(kid string, err error)) (map[string]PublicKey, error) {
	set, err := jwk.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("parse jwks: %w", err)
	}
	if skip == nil {
		skip = func(string, error) {}
	}
	out := make(map[string]PublicKey, set.Len())
	dups := map[string]bool{}
	for i := range set.Len() {
		k, _ := set.Key(i)
		kid := k.KeyID()
		alg := k.Algorithm().String()
		switch {
		case kid == "":
			skip(kid, errors.New("no kid"))
			continue
		case alg == "":
			skip(kid, errors.New("no alg"))
			continue
		case alg != ES256 && alg != EdDSA && alg != RS256:
			skip(kid, fmt.Errorf("alg %q is not accepted", truncate(alg, 16)))
			continue
		case k.KeyUsage() != "" && k.KeyUsage() != "sig":
			skip(kid, fmt.Errorf("use %q is not sig", truncate(k.KeyUsage(), 16)))
			continue
		}
		if _, dup := out[kid]; dup || dups[kid] {
			skip(kid, errors.New("duplicate kid"))
			delete(out, kid)
			dups[kid] = true
			continue
		}
		pk, err := jwk.PublicKeyOf(k)
		if err != nil {
			skip(kid, err)
			continue
		}
		var raw any
		if err := pk.Raw(&raw); err != nil {
			skip(kid, err)
			continue
		}
		if err := checkKeyType(raw, alg); err != nil {
			skip(kid, err)
			continue
		}
		out[kid] = PublicKey{Key: raw, Alg: alg}
	}
	return out, nil
}

// maxAge reads max-age from a Cache-Control header value.
func maxAge(cc string) (time.Duration, bool) {
	for d := range strings.SplitSeq(cc, ",") {
		d = strings.TrimSpace(d)
		name, val, ok := strings.Cut(d, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "max-age") {
			continue
		}
		n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(val), `"`), 10, 64)
		if err != nil || n < 0 {
			return 0, false
		}
		return time.Duration(min(n, 1<<30)) * time.Second, true
	}
	return 0, false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
