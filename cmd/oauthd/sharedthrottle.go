package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"sync"
	"time"

	"oauthd/issuer/throttle"
)

// throttleRows is where a database shared by replicas keeps the limiters'
// failures: one counter per row, each failure announced to every replica
// (a "throttle" change).
type throttleRows interface {
	// Load returns the state of each row.
	Load(ctx context.Context, rows [][]byte) ([]int64, error)
	// Fail charges each row whose budget (rules[i]) has room at now and
	// returns the states after.
	Fail(ctx context.Context, now time.Time, rows [][]byte, rules []throttle.Rule) ([]int64, error)
}

// rowThrottle is the throttle.Store of the replicas on a shared database:
// a limiter's key is the row "NAME:" + the key's binary form, and the
// announcements come from the database's changes (wired.follow calls
// learn).
type rowThrottle struct {
	rows throttleRows

	mu     sync.RWMutex
	follow map[string][]func(throttle.Key, int64)
}

// sharedThrottle is what serve's limiters share on a shared database. The
// secret their names are hashed with is derived from the refresh-token
// key, which every replica loads from the database (and never stores
// elsewhere).
func sharedThrottle(rows throttleRows, refreshKey []byte) (*throttle.Shared, *rowThrottle) {
	m := hmac.New(sha256.New, refreshKey)
	m.Write([]byte("oauthd throttle names"))
	st := &rowThrottle{rows: rows, follow: map[string][]func(throttle.Key, int64){}}
	return &throttle.Shared{Store: st, Secret: m.Sum(nil)}, st
}

func throttleRow(limiter string, k throttle.Key) []byte {
	b, _ := k.AppendBinary(append(make([]byte, 0, len(limiter)+1+throttle.KeyLen), limiter+":"...))
	return b
}

// Load implements throttle.Store.
func (p *rowThrottle) Load(ctx context.Context, limiter string, keys []throttle.StoredKey) error {
	raw := make([][]byte, len(keys))
	for i, k := range keys {
		raw[i] = throttleRow(limiter, k.Key)
	}
	full, err := p.rows.Load(ctx, raw)
	if err != nil {
		return err
	}
	for i := range keys {
		keys[i].Full = full[i]
	}
	return nil
}

// Fail implements throttle.Store.
func (p *rowThrottle) Fail(ctx context.Context, limiter string, now time.Time, keys []throttle.StoredKey) error {
	raw, rules := make([][]byte, len(keys)), make([]throttle.Rule, len(keys))
	for i, k := range keys {
		raw[i], rules[i] = throttleRow(limiter, k.Key), k.Rule
	}
	full, err := p.rows.Fail(ctx, now, raw, rules)
	if err != nil {
		return err
	}
	for i := range keys {
		keys[i].Full = full[i]
	}
	return nil
}

// Follow implements throttle.Store.
func (p *rowThrottle) Follow(limiter string, learn func(throttle.Key, int64)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.follow[limiter] = append(p.follow[limiter], learn)
}

// learn passes an announced key (a "throttle" change's row and state)
// to its limiter.
func (p *rowThrottle) learn(row []byte, full int64) {
	limiter, raw, ok := strings.Cut(string(row), ":")
	var k throttle.Key
	if !ok || k.UnmarshalBinary([]byte(raw)) != nil {
		return
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, fn := range p.follow[limiter] {
		fn(k, full)
	}
}
