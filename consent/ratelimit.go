package consent

import (
	"sync"
	"time"
)

// Login throttling: failed logins are counted per login name and per source
// address over a sliding window. Past the limit, further attempts are
// refused with 429 until the oldest failure leaves the window, so the block
// lifts by itself (no permanent lockout of the real user). Successful logins
// are not counted.
const (
	loginWindow       = 5 * time.Minute
	maxFailuresByName = 5
	// maxFailuresByAddr is higher: many users may share one address (NAT).
	maxFailuresByAddr = 20
	// maxLimiterKeys bounds memory under a spray of distinct names/addresses;
	// past it, expired entries are swept, and if none expired the oldest
	// arrivals are not tracked (the per-address limit still applies to them).
	maxLimiterKeys = 100_000
)

// limiter counts recent failures per key. It is safe for concurrent use.
type limiter struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string][]time.Time // failure times, oldest first
}

func newLimiter(now func() time.Time) *limiter {
	return &limiter{now: now, m: map[string][]time.Time{}}
}

// recent drops failures outside the window and returns what remains.
func (l *limiter) recent(key string, now time.Time) []time.Time {
	ts := l.m[key]
	i := 0
	for i < len(ts) && !now.Before(ts[i].Add(loginWindow)) {
		i++
	}
	ts = ts[i:]
	if len(ts) == 0 {
		delete(l.m, key)
		return nil
	}
	l.m[key] = ts
	return ts
}

// blocked reports whether key has max or more recent failures, and when the
// oldest of them expires.
func (l *limiter) blocked(key string, max int) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	ts := l.recent(key, now)
	if len(ts) < max {
		return 0, false
	}
	return ts[len(ts)-max].Add(loginWindow).Sub(now), true
}

// fail records a failure for key.
func (l *limiter) fail(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if _, ok := l.m[key]; !ok && len(l.m) >= maxLimiterKeys {
		for k := range l.m {
			l.recent(k, now)
		}
		if len(l.m) >= maxLimiterKeys {
			return
		}
	}
	ts := l.recent(key, now)
	if len(ts) >= maxFailuresByAddr { // no key needs more history than that
		ts = ts[1:]
	}
	l.m[key] = append(ts, now)
}

// reset forgets key's failures (after a successful login by that name).
func (l *limiter) reset(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, key)
}
