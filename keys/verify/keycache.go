package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/httpcc"
)

// KeyCacheConfig configures a [KeyCache].
type KeyCacheConfig[T any] struct {
	// Load reads the keys and says how long they may be used (before the
	// bounds below apply), e.g. [FetchJWKS] and [CacheAge]. It runs
	// without its caller's cancellation, bounded by 10 s.
	Load func(ctx context.Context) (T, time.Duration, error)
	// MinRefresh is the least time between two loads that were not
	// forced (an expired set, an unknown kid): made-up kids or a source
	// that is down cannot make every caller wait on a load.
	MinRefresh time.Duration
	// MinAge and MaxAge bound how long loaded keys are used.
	MinAge, MaxAge time.Duration
	// UseExpired keeps answering from expired keys while the source
	// cannot be loaded (a resource server that must not stop when the
	// issuer is briefly down). Without it, keys that have expired are
	// never used once a load has failed: making the source unreachable
	// cannot keep a removed key alive.
	UseExpired bool
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// OnError is told of every failed load (may be nil).
	OnError func(ctx context.Context, err error)
}

// KeyCache is the one cache of keys fetched from elsewhere (a JWKS URL,
// a key file): the verifier's [RemoteKeySet] and the login handover's
// platform keys both use it. Concurrent callers share one load; loads
// not forced happen at most once per MinRefresh. It is safe for
// concurrent use.
type KeyCache[T any] struct {
	cfg KeyCacheConfig[T]
	cur atomic.Pointer[cached[T]]

	mu          sync.Mutex
	lastAttempt time.Time // start of the last load; guarded by mu
	lastErr     error     // of the last load; guarded by mu
	inflight    *flight   // the load under way, or nil; guarded by mu
}

type cached[T any] struct {
	keys    T
	expires time.Time
}

// flight is one load that every concurrent caller waits for.
type flight struct {
	done chan struct{}
	err  error // set before done is closed
}

// NewKeyCache returns a cache that loads when first asked.
func NewKeyCache[T any](cfg KeyCacheConfig[T]) *KeyCache[T] {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxAge < cfg.MinAge {
		cfg.MaxAge = cfg.MinAge
	}
	return &KeyCache[T]{cfg: cfg}
}

// ErrNoKeys is returned when no keys could be loaded yet, or (without
// UseExpired) when the keys have expired and the last load failed.
var ErrNoKeys = errors.New("no usable keys")

// Get returns the keys. While they are fresh and known(keys) holds (say,
// the kid wanted is in them) they are returned at once; otherwise Get
// joins the load under way or starts one (at most one per MinRefresh)
// and waits for it.
func (c *KeyCache[T]) Get(ctx context.Context, known func(T) bool) (T, error) {
	var zero T
	cur := c.cur.Load()
	if cur != nil && c.cfg.Now().Before(cur.expires) && (known == nil || known(cur.keys)) {
		return cur.keys, nil
	}
	if f := c.startOrJoin(ctx, false); f != nil {
		select {
		case <-f.done:
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
	cur = c.cur.Load()
	c.mu.Lock()
	lastErr := c.lastErr
	c.mu.Unlock()
	switch {
	case cur == nil && lastErr != nil:
		return zero, fmt.Errorf("%w: %w", ErrNoKeys, lastErr)
	case cur == nil:
		return zero, ErrNoKeys
	case !c.cfg.UseExpired && lastErr != nil && !c.cfg.Now().Before(cur.expires):
		return zero, fmt.Errorf("%w: the keys expired and the last load failed: %w", ErrNoKeys, lastErr)
	}
	return cur.keys, nil
}

// Refresh loads now (or waits for the load under way), ignoring
// MinRefresh, and returns the load's error.
func (c *KeyCache[T]) Refresh(ctx context.Context) error {
	f := c.startOrJoin(ctx, true)
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startOrJoin returns the load under way, or starts one unless the last
// one started less than MinRefresh ago (and force is false), in which
// case it returns nil. The load outlives a caller that gives up.
func (c *KeyCache[T]) startOrJoin(ctx context.Context, force bool) *flight {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight != nil {
		return c.inflight
	}
	now := c.cfg.Now()
	if !force && !c.lastAttempt.IsZero() && now.Sub(c.lastAttempt) < c.cfg.MinRefresh {
		return nil
	}
	c.lastAttempt = now
	f := &flight{done: make(chan struct{})}
	c.inflight = f
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	go func() {
		defer cancel()
		keys, age, err := c.cfg.Load(lctx)
		if err == nil {
			age = min(max(age, c.cfg.MinAge), c.cfg.MaxAge)
			c.cur.Store(&cached[T]{keys: keys, expires: c.cfg.Now().Add(age)})
		} else if c.cfg.OnError != nil {
			c.cfg.OnError(lctx, err)
		}
		c.mu.Lock()
		c.inflight, c.lastErr = nil, err
		c.mu.Unlock()
		f.err = err
		close(f.done)
	}()
	return f
}

// maxJWKSBytes bounds a fetched JWKS.
const maxJWKSBytes = 1 << 20

// FetchJWKS GETs a JWKS (at most 1 MiB) and returns its body and its
// Cache-Control header. It follows no redirect, whatever client's
// CheckRedirect says: the keys come from the URL the operator configured,
// not from wherever that server points.
func FetchJWKS(ctx context.Context, client *http.Client, url string) (body []byte, cacheControl string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", "application/json")
	noRedirect := *client
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirect.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return nil, "", fmt.Errorf("GET %s: %s: redirects are not followed; configure the URL it points to", url, resp.Status)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("GET %s: %w", url, err)
	}
	if len(body) > maxJWKSBytes {
		return nil, "", fmt.Errorf("GET %s: JWKS larger than %d bytes", url, maxJWKSBytes)
	}
	return body, resp.Header.Get("Cache-Control"), nil
}

// CacheAge is how long a response with Cache-Control cc may be used, at
// most limit: its max-age, 0 for no-store or no-cache, limit when it says
// neither (or cannot be read). Parsed by lestrrat-go/httpcc, the parser
// jwx's own cache uses.
func CacheAge(cc string, limit time.Duration) time.Duration {
	if cc == "" {
		return limit
	}
	ds, err := httpcc.ParseResponseDirectives(cc)
	if err != nil {
		return limit
	}
	age := limit
	for _, d := range ds {
		switch strings.ToLower(d.Name) {
		case httpcc.NoStore, httpcc.NoCache:
			return 0
		case httpcc.MaxAge:
			if s, err := strconv.ParseUint(strings.Trim(d.Value, `"`), 10, 32); err == nil && time.Duration(s)*time.Second < age {
				age = time.Duration(s) * time.Second
			}
		}
	}
	return age
}
