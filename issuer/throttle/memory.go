package throttle

import (
	"context"
	"sync"
	"time"
)

// Memory is the in-process [Counter]. Per key it keeps the time at which
// the key's failure budget is whole again (the generic cell rate
// algorithm: a token bucket kept as one timestamp) and the number of
// attempts in flight. A key whose budget is whole and that has nothing in
// flight is the same as an absent one and is deleted, so only keys that
// failed recently take memory, and a success leaves nothing behind.
//
// The map holds at most maxKeys keys (32 bytes of key and 16 of value
// each, about 7 MiB at the default 100,000). When it is full, the
// forgettable keys are swept (at most once a second), and otherwise the
// key nearest to whole among a few sampled is dropped (never one with an
// attempt in flight, if another is sampled): an attacker who fills the map
// from many addresses can make the limiter forget, but never make it
// refuse anyone.
type Memory struct {
	rules   Rules
	maxKeys int

	mu        sync.Mutex
	m         map[Key]entry
	lastSweep int64
}

type entry struct {
	full     int64 // Unix nanoseconds at which the failure budget is whole
	inflight int64 // attempts started and not ended
}

// NewMemory returns an in-memory Counter with rules, tracking at most
// maxKeys keys (default [DefaultMaxKeys] when ≤ 0).
func NewMemory(rules Rules, maxKeys int) *Memory {
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	return &Memory{rules: rules, maxKeys: maxKeys, m: make(map[Key]entry)}
}

// Len returns the number of keys tracked.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}

// Peek implements [Counter].
func (m *Memory) Peek(_ context.Context, now time.Time, ks Keys) (time.Duration, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.over(now.UnixNano(), ks, 0)
}

// over returns the first key of ks whose failures, plus inflight times
// its attempts in flight (1: counted; 0: not), leave no attempt, and the
// wait until they leave one. Called with m.mu held.
func (m *Memory) over(t int64, ks Keys, inflight int64) (time.Duration, int) {
	var wait int64
	exhausted := -1
	for i := range ks.n {
		r := m.rules[ks.k[i].Kind]
		if r.Burst <= 0 {
			continue
		}
		e := m.m[ks.k[i]]
		used := max(e.full, t) + int64(r.Every) - t // with this attempt
		used += inflight * e.inflight * int64(r.Every)
		if over := used - int64(r.Burst)*int64(r.Every); over > 0 {
			wait = max(wait, over)
			if exhausted < 0 {
				exhausted = i
			}
		}
	}
	return time.Duration(wait), exhausted
}

// Start implements [Counter]: the attempt is held here.
func (m *Memory) Start(_ context.Context, now time.Time, ks Keys) (time.Duration, int, bool, Hold) {
	t := now.UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	if wait, i := m.over(t, ks, 0); i >= 0 {
		return wait, i, false, HeldHere
	}
	if _, i := m.over(t, ks, 1); i >= 0 {
		return 0, i, true, HeldHere
	}
	m.hold(t, ks)
	return 0, -1, false, HeldHere
}

// hold counts an attempt in flight under every limited key of ks. Called
// with m.mu held.
func (m *Memory) hold(t int64, ks Keys) {
	for i := range ks.n {
		k := ks.k[i]
		if m.rules[k.Kind].Burst <= 0 {
			continue
		}
		e, ok := m.m[k]
		if !ok && len(m.m) >= m.maxKeys {
			m.makeRoom(t)
		}
		e.inflight++
		m.m[k] = e
	}
}

// End implements [Counter].
func (m *Memory) End(_ context.Context, now time.Time, ks Keys, _ Hold, failed bool) {
	t := now.UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range ks.n {
		k := ks.k[i]
		r := m.rules[k.Kind]
		e, ok := m.m[k]
		if r.Burst <= 0 || !ok {
			continue
		}
		e.inflight = max(e.inflight-1, 0)
		if failed {
			e.full = max(e.full, t) + int64(r.Every)
		}
		m.store(k, e, t)
	}
}

// Fail implements [Counter].
func (m *Memory) Fail(_ context.Context, now time.Time, ks Keys) {
	t := now.UnixNano()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range ks.n {
		k := ks.k[i]
		r := m.rules[k.Kind]
		if r.Burst <= 0 {
			continue
		}
		e := m.m[k]
		// Concurrent failures past the budget do not push it further.
		if next := max(e.full, t) + int64(r.Every); next-t <= int64(r.Burst)*int64(r.Every) {
			e.full = next
		}
		if _, ok := m.m[k]; !ok && len(m.m) >= m.maxKeys {
			m.makeRoom(t)
		}
		m.store(k, e, t)
	}
}

// store keeps e under k, or deletes k when e is forgettable.
func (m *Memory) store(k Key, e entry, t int64) {
	if e.full <= t && e.inflight == 0 {
		delete(m.m, k)
		return
	}
	m.m[k] = e
}

// makeRoom drops keys until one more fits. Called with m.mu held.
func (m *Memory) makeRoom(t int64) {
	if t-m.lastSweep >= int64(time.Second) {
		m.lastSweep = t
		for k, e := range m.m {
			if e.full <= t && e.inflight == 0 {
				delete(m.m, k)
			}
		}
	}
	for len(m.m) >= m.maxKeys {
		// Map iteration starts at a random place: sample a few keys and
		// drop the one nearest to whole (least is forgotten), preferring
		// one with nothing in flight.
		var victim Key
		var best entry
		n := 0
		for k, e := range m.m {
			if n == 0 || (e.inflight == 0 && best.inflight > 0) || (e.inflight == 0) == (best.inflight == 0) && e.full < best.full {
				victim, best = k, e
			}
			if n++; n == 8 {
				break
			}
		}
		delete(m.m, victim)
	}
}

// nearBudget reports whether a key of ks has used at least half its
// budget at t (this process's view). Called without m.mu held.
func (m *Memory) nearBudget(t int64, ks Keys) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range ks.n {
		r := m.rules[ks.k[i].Kind]
		if r.Burst <= 0 {
			continue
		}
		e, ok := m.m[ks.k[i]]
		if ok && e.full > t && 2*(e.full-t) >= int64(r.Burst)*int64(r.Every) {
			return true
		}
	}
	return false
}

// holdCharged counts an attempt that a store holds as in flight here too,
// so that another attempt under its keys beside it is held in the store
// as well (startClean).
func (m *Memory) holdCharged(t int64, ks Keys) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hold(t, ks)
}

// startClean starts an attempt here, and reports true, when no key of ks
// has failures or an attempt in flight: checked and counted under one
// lock, so that of attempts arriving at once only one starts this way.
func (m *Memory) startClean(t int64, ks Keys) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range ks.n {
		if m.rules[ks.k[i].Kind].Burst <= 0 {
			continue
		}
		if e, ok := m.m[ks.k[i]]; ok && (e.full > t || e.inflight > 0) {
			return false
		}
	}
	m.hold(t, ks)
	return true
}

// learn raises the failures of k to full (Unix nanoseconds at which its
// budget is whole), as another replica or the shared store knows them. It
// never lowers them: failures only lapse with time.
func (m *Memory) learn(t int64, k Key, full int64) {
	if full <= t || m.rules[k.Kind].Burst <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[k]
	if full <= e.full {
		return
	}
	if !ok && len(m.m) >= m.maxKeys {
		m.makeRoom(t)
	}
	e.full = full
	m.m[k] = e
}
