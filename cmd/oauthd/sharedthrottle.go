package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"sync"
	"time"

	"oauthd/data/postgres"
	"oauthd/issuer/throttle"
)

// pgThrottle is the throttle.Store of the replicas on PostgreSQL: a
// limiter's key is the row "NAME:" + the key's binary form in the
// throttle table, and the announcements come from the change listener
// (wired.follow calls learn).
type pgThrottle struct {
	pg *postgres.Store

	mu     sync.RWMutex
	follow map[string][]func(throttle.Key, int64)
}

func newPGThrottle(pg *postgres.Store) *pgThrottle {
	return &pgThrottle{pg: pg, follow: map[string][]func(throttle.Key, int64){}}
}

// sharedThrottle is what serve's limiters share on PostgreSQL. The
// secret their names are hashed with is derived from the refresh-token
// key, which every replica loads from the database (and never stores
// elsewhere).
func sharedThrottle(pg *postgres.Store, refreshKey []byte) (*throttle.Shared, *pgThrottle) {
	m := hmac.New(sha256.New, refreshKey)
	m.Write([]byte("oauthd throttle names"))
	st := newPGThrottle(pg)
	return &throttle.Shared{Store: st, Secret: m.Sum(nil)}, st
}

func throttleRow(limiter string, k throttle.Key) []byte {
	b, _ := k.AppendBinary(append(make([]byte, 0, len(limiter)+1+throttle.KeyLen), limiter+":"...))
	return b
}

// Load implements throttle.Store.
func (p *pgThrottle) Load(ctx context.Context, limiter string, keys []throttle.StoredKey) error {
	raw := make([][]byte, len(keys))
	for i, k := range keys {
		raw[i] = throttleRow(limiter, k.Key)
	}
	full, err := p.pg.ThrottleLoad(ctx, raw)
	if err != nil {
		return err
	}
	for i := range keys {
		keys[i].Full = full[i]
	}
	return nil
}

// Fail implements throttle.Store.
func (p *pgThrottle) Fail(ctx context.Context, limiter string, now time.Time, keys []throttle.StoredKey) error {
	tk := make([]postgres.ThrottleKey, len(keys))
	for i, k := range keys {
		tk[i] = postgres.ThrottleKey{Key: throttleRow(limiter, k.Key), Rule: postgres.ThrottleRule{Burst: k.Rule.Burst, Every: k.Rule.Every}}
	}
	full, err := p.pg.ThrottleFail(ctx, now, tk)
	if err != nil {
		return err
	}
	for i := range keys {
		keys[i].Full = full[i]
	}
	return nil
}

// Follow implements throttle.Store.
func (p *pgThrottle) Follow(limiter string, learn func(throttle.Key, int64)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.follow[limiter] = append(p.follow[limiter], learn)
}

// learn passes an announced key (the ID of a "throttle" event) to its
// limiter.
func (p *pgThrottle) learn(id string) {
	row, full, ok := postgres.ParseThrottleEvent(id)
	if !ok {
		return
	}
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
