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
	// Charge holds an attempt of every row if each one's failures and
	// holds leave room in its budget at now, or none, announces nothing,
	// and returns whether it held and each row's failures.
	Charge(ctx context.Context, now time.Time, rows [][]byte, rules []Rule) ([]int64, bool, error)
	// Settle gives back a hold of Charge to each row and, if failed,
	// counts the failure as Fail does; it returns the failures after.
	Settle(ctx context.Context, now time.Time, rows [][]byte, rules []Rule, failed bool) ([]int64, error)
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

// Settle implements [Store].
func (p *RowStore) Settle(ctx context.Context, limiter string, now time.Time, keys []StoredKey, failed bool) error {
	raw, rules := rowsOf(limiter, keys)
	full, err := p.rows.Settle(ctx, now, raw, rules, failed)
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
