package verify

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
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
	// never below [MinCacheAge] (no-store and no-cache too). Default 1h.
	MaxAge time.Duration
	// Logger logs failed fetches. Default: discard.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// RemoteKeySet is a [KeySource] over an issuer's JWKS fetched by HTTP and
// cached (a [KeyCache]). When the issuer cannot be reached it keeps
// serving the keys it has. It is safe for concurrent use.
type RemoteKeySet struct {
	cfg   RemoteConfig
	cache *KeyCache[map[string]remoteKey]
}

type remoteKey struct {
	key crypto.PublicKey
	alg string
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
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &RemoteKeySet{cfg: cfg}
	s.cache = NewKeyCache(KeyCacheConfig[map[string]remoteKey]{
		Load: s.fetch, MinRefresh: cfg.MinRefresh, MinAge: MinCacheAge, MaxAge: cfg.MaxAge,
		UseExpired: true, Now: cfg.Now,
		OnError: func(ctx context.Context, err error) {
			cfg.Logger.WarnContext(ctx, "jwks fetch failed; keeping cached keys", "url", cfg.URL, "err", err)
		},
	})
	return s
}

var _ KeySource = (*RemoteKeySet)(nil)

// Key implements [KeySource]. It answers from the cache while the cache is
// fresh and knows kid. Otherwise (stale cache, unknown kid) it joins the
// fetch under way or starts one, but starts at most one fetch per
// MinRefresh; when the issuer is unreachable it answers from the keys it
// has. An unknown kid gives an error wrapping [ErrUnknownKey].
func (s *RemoteKeySet) Key(ctx context.Context, kid string) (crypto.PublicKey, string, error) {
	keys, err := s.cache.Get(ctx, func(m map[string]remoteKey) bool { _, ok := m[kid]; return ok })
	if err != nil {
		return nil, "", fmt.Errorf("jwks of %s: %w", s.cfg.URL, err)
	}
	if k, ok := keys[kid]; ok {
		return k.key, k.alg, nil
	}
	return nil, "", fmt.Errorf("kid %q: %w", truncate(kid, maxKIDInError), ErrUnknownKey)
}

// Refresh fetches the JWKS now (or waits for the fetch under way),
// ignoring MinRefresh. A resource server may call it at start so the
// first token does not wait.
func (s *RemoteKeySet) Refresh(ctx context.Context) error {
	return s.cache.Refresh(ctx)
}

// fetch loads the JWKS and how long it may be used (its Cache-Control).
func (s *RemoteKeySet) fetch(ctx context.Context) (map[string]remoteKey, time.Duration, error) {
	body, cc, err := FetchJWKS(ctx, s.cfg.Client, s.cfg.URL)
	if err != nil {
		return nil, 0, err
	}
	byKID, err := ParseJWKS(body, func(kid string, err error) {
		s.cfg.Logger.WarnContext(ctx, "jwks key skipped", "kid", truncate(kid, maxKIDInError), "err", err)
	})
	if err != nil {
		return nil, 0, fmt.Errorf("GET %s: %w", s.cfg.URL, err)
	}
	m := make(map[string]remoteKey, len(byKID))
	for kid, k := range byKID {
		m[kid] = remoteKey{key: k.Key, alg: k.Alg}
	}
	return m, CacheAge(cc, s.cfg.MaxAge), nil
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
		raw, err := publicKey(k)
		if err != nil {
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

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
