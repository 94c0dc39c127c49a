package throttle

import (
	"sync"
	"time"
)

// Memory is the in-process [Counter]: one number per key, the time at
// which the key's budget is whole again (the generic cell rate algorithm,
// a token bucket kept as one timestamp). A key whose budget is whole is
// the same as an absent one and is deleted, so only keys that failed
// recently take memory, and a success (counted, then given back) leaves
// nothing behind.
//
// The map holds at most maxKeys keys (32 bytes of key and 8 of value
// each, about 6 MiB at the default 100,000). When it is full, the keys
// whose budget is whole again are swept (at most once a second), and
// otherwise the key nearest to whole among a few sampled is dropped: an
// attacker who fills the map from many addresses can make the limiter
// forget, but never make it refuse anyone.
type Memory struct {
	rules   Rules
	maxKeys int

	mu        sync.Mutex
	m         map[Key]int64 // key → Unix nanoseconds at which its budget is whole
	lastSweep int64
}

// NewMemory returns an in-memory Counter with rules, tracking at most
// maxKeys keys (default [DefaultMaxKeys] when ≤ 0).
func NewMemory(rules Rules, maxKeys int) *Memory {
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	return &Memory{rules: rules, maxKeys: maxKeys, m: make(map[Key]int64)}
}

// Len returns the number of keys tracked.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}

// Take implements [Counter].
func (m *Memory) Take(now time.Time, ks Keys) (time.Duration, int) {
	t := now.UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	if wait, i := m.peek(t, ks); i >= 0 {
		return wait, i
	}
	for i := range ks.n {
		k := ks.k[i]
		r := m.rules[k.Kind]
		if r.Burst <= 0 {
			continue
		}
		full, ok := m.m[k]
		if !ok && len(m.m) >= m.maxKeys {
			m.makeRoom(t)
		}
		m.m[k] = max(full, t) + int64(r.Every)
	}
	return 0, -1
}

// Peek implements [Counter].
func (m *Memory) Peek(now time.Time, ks Keys) (time.Duration, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peek(now.UnixNano(), ks)
}

// peek is Peek with m.mu held.
func (m *Memory) peek(t int64, ks Keys) (time.Duration, int) {
	var wait int64
	exhausted := -1
	for i := range ks.n {
		r := m.rules[ks.k[i].Kind]
		if r.Burst <= 0 {
			continue
		}
		full := max(m.m[ks.k[i]], t)
		next := full + int64(r.Every)
		if over := next - t - int64(r.Burst)*int64(r.Every); over > 0 {
			if over > wait {
				wait = over
			}
			if exhausted < 0 {
				exhausted = i
			}
		}
	}
	return time.Duration(wait), exhausted
}

// Give implements [Counter].
func (m *Memory) Give(now time.Time, ks Keys) {
	t := now.UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range ks.n {
		k := ks.k[i]
		r := m.rules[k.Kind]
		full, ok := m.m[k]
		if r.Burst <= 0 || !ok {
			continue
		}
		if full -= int64(r.Every); full <= t {
			delete(m.m, k)
		} else {
			m.m[k] = full
		}
	}
}

// makeRoom drops keys until one more fits. Called with m.mu held.
func (m *Memory) makeRoom(t int64) {
	if t-m.lastSweep >= int64(time.Second) {
		m.lastSweep = t
		for k, full := range m.m {
			if full <= t {
				delete(m.m, k)
			}
		}
	}
	for len(m.m) >= m.maxKeys {
		// Map iteration starts at a random place: sample a few keys and
		// drop the one nearest to whole (least is forgotten).
		var victim Key
		best, n := int64(0), 0
		for k, full := range m.m {
			if n == 0 || full < best {
				victim, best = k, full
			}
			if n++; n == 8 {
				break
			}
		}
		delete(m.m, victim)
	}
}
