package issuer

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of the failed-authentication limiter (issue 5: client-secret
// brute force).
const (
	authFailuresPerMinute = 10
	authFailureBurst      = 10
	authLimiterMaxKeys    = 10000
)

// failureLimiter counts failed client authentications per key (a client ID
// or a source address) in token buckets: each failure takes a token, and a
// key without a token left is refused until one has refilled. Successes
// take nothing. The map is bounded: when full, keys whose bucket has
// refilled completely (indistinguishable from a fresh one) are dropped, and
// if none has, an arbitrary key is. A limit always expires by itself.
type failureLimiter struct {
	mu      sync.Mutex
	limit   rate.Limit
	burst   int
	maxKeys int
	keys    map[string]*rate.Limiter
}

func newFailureLimiter(perMinute float64, burst, maxKeys int) *failureLimiter {
	return &failureLimiter{
		limit:   rate.Limit(perMinute / 60),
		burst:   burst,
		maxKeys: maxKeys,
		keys:    make(map[string]*rate.Limiter),
	}
}

// blocked reports whether key has no failure left at now, and if so how
// many whole seconds until it has one.
func (l *failureLimiter) blocked(key string, now time.Time) (retryAfter int, blocked bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.keys[key]
	if !ok {
		return 0, false
	}
	tokens := lim.TokensAt(now)
	if tokens >= 1 {
		return 0, false
	}
	wait := (1 - tokens) / float64(l.limit)
	return max(1, int(math.Ceil(wait))), true
}

// fail records one failure for key at now.
func (l *failureLimiter) fail(key string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.keys[key]
	if !ok {
		if len(l.keys) >= l.maxKeys {
			l.evict(now)
		}
		lim = rate.NewLimiter(l.limit, l.burst)
		l.keys[key] = lim
	}
	lim.AllowN(now, 1)
}

// evict drops the keys whose bucket is full again, or one arbitrary key if
// none is. Called with l.mu held.
func (l *failureLimiter) evict(now time.Time) {
	for k, lim := range l.keys {
		if lim.TokensAt(now) >= float64(l.burst) {
			delete(l.keys, k)
		}
	}
	for k := range l.keys {
		if len(l.keys) < l.maxKeys {
			break
		}
		delete(l.keys, k)
	}
}

// size returns the number of keys tracked.
func (l *failureLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}
