package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// ThrottleRule is the budget of a key: Burst attempts at once, and one
// more each Every after that (a token bucket). A key that has not been
// charged for Burst×Every holds nothing: every limit lifts by itself.
type ThrottleRule struct {
	Burst int
	Every time.Duration
}

// ThrottleKey is one shared counter and its rule. Key is opaque (the
// limiter's kind, identifier and address, e.g. 25 bytes).
type ThrottleKey struct {
	Key  []byte
	Rule ThrottleRule
}

// ThrottleTake charges one attempt against every key at now, all or none,
// in one transaction whose row locks make concurrent attempts from every
// replica count one after another: the limit holds across replicas. When a
// key has no attempt left it charges nothing and returns that key's index
// and how long until every key has an attempt again; else it returns
// exhausted = -1. This is the shape of the failure limiter's Counter
// (issuer/throttle), with a context and an error because it is I/O.
func (s *Store) ThrottleTake(ctx context.Context, now time.Time, keys []ThrottleKey) (wait time.Duration, exhausted int, err error) {
	exhausted = -1
	err = s.throttle(ctx, "throttle take", keys, func(tats []int64) ([]int64, error) {
		n := unixNano(now)
		next := make([]int64, len(tats))
		for i, k := range keys {
			every := int64(k.Rule.Every)
			t := max(tats[i], n) + every
			if over := t - n - int64(k.Rule.Burst)*every; over > 0 {
				if exhausted < 0 || time.Duration(over) > wait {
					wait = time.Duration(over)
				}
				if exhausted < 0 {
					exhausted = i
				}
			}
			next[i] = t
		}
		if exhausted >= 0 {
			return nil, errExhausted
		}
		return next, nil
	})
	if errors.Is(err, errExhausted) {
		return wait, exhausted, nil
	}
	return 0, -1, err
}

// ThrottleGive gives back an attempt that ThrottleTake charged at now.
func (s *Store) ThrottleGive(ctx context.Context, now time.Time, keys []ThrottleKey) error {
	return s.throttle(ctx, "throttle give", keys, func(tats []int64) ([]int64, error) {
		n := unixNano(now)
		next := make([]int64, len(tats))
		for i, k := range keys {
			next[i] = max(tats[i]-int64(k.Rule.Every), n)
		}
		return next, nil
	})
}

var errExhausted = errors.New("exhausted")

// throttle locks the keys' rows (creating missing ones; in key order, so
// that two attempts on overlapping keys cannot deadlock), passes their
// states to decide and writes what it returns.
func (s *Store) throttle(ctx context.Context, op string, keys []ThrottleKey, decide func([]int64) ([]int64, error)) error {
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	raw := make([][]byte, len(keys))
	for i, k := range keys {
		raw[i] = k.Key
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO throttle (key, tat_ns) SELECT k, $2 FROM unnest($1::bytea[]) AS k ORDER BY k ON CONFLICT (key) DO NOTHING", raw, int64(-1<<62)); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT key, tat_ns FROM throttle WHERE key = ANY($1) ORDER BY key FOR UPDATE", raw)
		if err != nil {
			return err
		}
		tats := make([]int64, len(keys))
		var key []byte
		var tat int64
		_, err = pgx.ForEachRow(rows, []any{&key, &tat}, func() error {
			for i, k := range raw {
				if slices.Equal(k, key) {
					tats[i] = tat
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		next, err := decide(tats)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "UPDATE throttle SET tat_ns = n.t FROM unnest($1::bytea[], $2::bigint[]) AS n(k, t) WHERE throttle.key = n.k", raw, next)
		return err
	})
	if err != nil && !errors.Is(err, errExhausted) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return err
}

// ThrottleGC removes the keys that hold no charge at now.
func (s *Store) ThrottleGC(ctx context.Context, now time.Time) (int, error) {
	if err := s.begin(ctx, "throttle gc"); err != nil {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, "DELETE FROM throttle WHERE tat_ns < $1", unixNano(now))
	if err != nil {
		return 0, fmt.Errorf("throttle gc: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
