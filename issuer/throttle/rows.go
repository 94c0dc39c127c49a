package throttle

import (
	"context"
	"strings"
	"sync"
	"time"
)

// Rows is where a database shared by replicas keeps the limiters'
// failures: one counter per row, each failure announced to every replica.
type Rows interface {
	// Load returns the state of each row.
	Load(ctx context.Context, rows [][]byte) ([]int64, error)
	// Fail charges each row whose budget (rules[i]) has room at now,
	// announces the charged ones and returns the states after.
	Fail(ctx context.Context, now time.Time, rows [][]byte, rules []Rule) ([]int64, error)
	// Charge charges every row if each budget has room at now, or none,
	// announces nothing, and returns whether it charged and the states
	// after.
	Charge(ctx context.Context, now time.Time, rows [][]byte, rules []Rule) ([]int64, bool, error)
	// Refund gives one charge back to each row and returns the states
	// after.
	Refund(ctx context.Context, now time.Time, rows [][]byte, rules []Rule) ([]int64, error)
	// Announce announces each row's state and returns it.
	Announce(ctx context.Context, rows [][]byte) ([]int64, error)
}

// RowStore is the [Store] of the replicas on a shared database ([Rows]):
// a limiter's key is the row "NAME:" + the key's binary form, and the
// announcements come from the database's change feed, which passes each
// to [RowStore.Learn]. Create it with [NewRowStore].
type RowStore struct {
	rows Rows

	mu     sync.RWMutex
	follow map[string][]func(Key, int64)
}

func throttleRow(limiter string, k Key) []byte {
	b, _ := k.AppendBinary(append(make([]byte, 0, len(limiter)+1+KeyLen), limiter+":"...))
	return b
}

// NewRowStore returns a RowStore over rows.
func NewRowStore(rows Rows) *RowStore {
	return &RowStore{rows: rows, follow: map[string][]func(Key, int64){}}
}

// rowsOf returns the rows of keys and their rules.
func rowsOf(limiter string, keys []StoredKey) ([][]byte, []Rule) {
	raw, rules := make([][]byte, len(keys)), make([]Rule, len(keys))
	for i, k := range keys {
		raw[i], rules[i] = throttleRow(limiter, k.Key), k.Rule
	}
	return raw, rules
}

// setFull sets Full of each key from full, unless err.
func setFull(keys []StoredKey, full []int64, err error) error {
	if err != nil {
		return err
	}
	for i := range keys {
		keys[i].Full = full[i]
	}
	return nil
}

// Load implements [Store].
func (p *RowStore) Load(ctx context.Context, limiter string, keys []StoredKey) error {
	raw, _ := rowsOf(limiter, keys)
	full, err := p.rows.Load(ctx, raw)
	return setFull(keys, full, err)
}

// Fail implements [Store].
func (p *RowStore) Fail(ctx context.Context, limiter string, now time.Time, keys []StoredKey) error {
	raw, rules := rowsOf(limiter, keys)
	full, err := p.rows.Fail(ctx, now, raw, rules)
	return setFull(keys, full, err)
}

// Charge implements [Store].
func (p *RowStore) Charge(ctx context.Context, limiter string, now time.Time, keys []StoredKey) (bool, error) {
	raw, rules := rowsOf(limiter, keys)
	full, ok, err := p.rows.Charge(ctx, now, raw, rules)
	return ok, setFull(keys, full, err)
}

// Refund implements [Store].
func (p *RowStore) Refund(ctx context.Context, limiter string, now time.Time, keys []StoredKey) error {
	raw, rules := rowsOf(limiter, keys)
	full, err := p.rows.Refund(ctx, now, raw, rules)
	return setFull(keys, full, err)
}

// Announce implements [Store].
func (p *RowStore) Announce(ctx context.Context, limiter string, keys []StoredKey) error {
	raw, _ := rowsOf(limiter, keys)
	full, err := p.rows.Announce(ctx, raw)
	return setFull(keys, full, err)
}

// Follow implements [Store].
func (p *RowStore) Follow(limiter string, learn func(Key, int64)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.follow[limiter] = append(p.follow[limiter], learn)
}

// Learn passes an announced key (a "throttle" change's row and state)
// to its limiter.
func (p *RowStore) Learn(row []byte, full int64) {
	limiter, raw, ok := strings.Cut(string(row), ":")
	var k Key
	if !ok || k.UnmarshalBinary([]byte(raw)) != nil {
		return
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, fn := range p.follow[limiter] {
		fn(k, full)
	}
}

var _ Store = (*RowStore)(nil)
