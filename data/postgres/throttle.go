package postgres

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ThrottleRule is the budget of a key: Burst failures at once, and one
// more each Every after that (a token bucket). A key that has not been
// charged for Burst×Every holds nothing: every limit lifts by itself.
type ThrottleRule struct {
	Burst int
	Every time.Duration
}

// ThrottleKey is one shared counter and its rule. Key is opaque (the
// limiter's name, the key's kind, identifier and address).
type ThrottleKey struct {
	Key  []byte
	Rule ThrottleRule
}

// throttleFail charges every key whose budget has room, in key order (two
// statements on overlapping keys lock their rows in the same order and
// cannot deadlock), and announces each charged key's new state. A key at
// its budget is locked but not changed, and not returned.
const throttleFail = throttleCharge + throttleNotify

// throttleCharge is throttleFail without the announcement (and without
// its FROM, which each adds).
const throttleCharge = `WITH n AS (SELECT * FROM unnest($1::bytea[], $3::bigint[], $4::bigint[]) AS n(k, every, cap)),
up AS (
	INSERT INTO throttle AS t (key, tat_ns)
	SELECT k, $2::bigint + every FROM n ORDER BY k
	ON CONFLICT (key) DO UPDATE SET tat_ns = GREATEST(t.tat_ns, $2::bigint) + (EXCLUDED.tat_ns - $2::bigint)
	WHERE GREATEST(t.tat_ns, $2::bigint) + (EXCLUDED.tat_ns - $2::bigint) - $2::bigint <= (SELECT cap FROM n WHERE n.k = t.key)
	RETURNING key, tat_ns
)
SELECT key, tat_ns`

// ThrottleFail counts a failure at now against every key whose budget has
// room for it (never past a budget: a flood of concurrent failures from
// every replica cannot push a limit further out), in one statement whose
// row locks make concurrent failures count one after another. It returns
// each key's state after (the Unix nanoseconds at which its budget is
// whole again) and announces the charged keys on [Channel] ("throttle
// HEXKEY STATE", see [ParseThrottleEvent]) so that every replica learns
// them.
func (s *Store) ThrottleFail(ctx context.Context, now time.Time, keys []ThrottleKey) ([]int64, error) {
	if err := s.begin(ctx, "throttle fail"); err != nil {
		return nil, err
	}
	raw, every, caps := throttleArgs(keys)
	full := make([]int64, len(keys))
	err := retry(ctx, func() error {
		clear(full)
		rows, err := s.pool.Query(ctx, throttleFail, raw, unixNano(now), every, caps)
		if err != nil {
			return err
		}
		err = scanStates(rows, raw, full, true)
		if retryable(err) {
			s.stats.retries.Add(1)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("throttle fail: %w", err)
	}
	if slices.Contains(full, 0) {
		// Keys at their budget: read their state (rare: only a failure
		// that found its budget used up, which the replica did not know).
		var rest [][]byte
		for i, k := range raw {
			if full[i] == 0 {
				rest = append(rest, k)
			}
		}
		got, err := s.ThrottleLoad(ctx, rest)
		if err != nil {
			return nil, err
		}
		j := 0
		for i := range raw {
			if full[i] == 0 {
				full[i] = got[j]
				j++
			}
		}
	}
	return full, nil
}

// errNoRoom rolls back a charge that a key's budget had no room for.
var errNoRoom = errors.New("throttle: no room")

// ThrottleCharge charges an attempt about to run against every key, as
// [Store.ThrottleFail] counts a failure, but all or none, and announces
// nothing: if a key's budget has no room, the transaction is rolled back
// and ok is false. It returns each key's state after. Give the charge
// back with [Store.ThrottleRefund] if the attempt succeeds; announce it
// with [Store.ThrottleAnnounce] if it fails.
func (s *Store) ThrottleCharge(ctx context.Context, now time.Time, keys []ThrottleKey) (full []int64, ok bool, err error) {
	if err := s.begin(ctx, "throttle charge"); err != nil {
		return nil, false, err
	}
	raw, every, caps := throttleArgs(keys)
	full = make([]int64, len(keys))
	err = s.tx(ctx, func(tx pgx.Tx) error {
		clear(full)
		rows, err := tx.Query(ctx, throttleCharge+" FROM up", raw, unixNano(now), every, caps)
		if err != nil {
			return err
		}
		if err := scanStates(rows, raw, full, false); err != nil {
			return err
		}
		if slices.Contains(full, 0) {
			return errNoRoom
		}
		return nil
	})
	switch {
	case err == nil:
		return full, true, nil
	case errors.Is(err, errNoRoom):
		full, err = s.ThrottleLoad(ctx, raw)
		return full, false, err
	default:
		return nil, false, fmt.Errorf("throttle charge: %w", err)
	}
}

// throttleRefund gives one charge back to each key, locking the rows in
// key order as throttleFail does, and announces the state after.
const throttleRefund = `WITH n AS (SELECT * FROM unnest($1::bytea[], $3::bigint[]) AS n(k, every)),
l AS (SELECT t.key FROM throttle t JOIN n ON t.key = n.k ORDER BY t.key FOR UPDATE OF t),
up AS (
	UPDATE throttle t SET tat_ns = GREATEST(t.tat_ns - n.every, $2::bigint)
	FROM n, l WHERE t.key = n.k AND l.key = t.key
	RETURNING t.key, t.tat_ns
)
SELECT key, tat_ns` + throttleNotify

// throttleNotify ends a statement that announces the states of the rows
// of up.
const throttleNotify = `, pg_notify('` + Channel + `', 'throttle ' || encode(key, 'hex') || ' ' || tat_ns) FROM up`

// ThrottleRefund gives back a charge of [Store.ThrottleCharge] (the
// attempt succeeded), returns each key's state after (0 for a key
// without a row) and announces it: notifications arrive in the order of
// the commits, so every replica can take the last one as the key's state,
// without the charge.
func (s *Store) ThrottleRefund(ctx context.Context, now time.Time, keys []ThrottleKey) ([]int64, error) {
	if err := s.begin(ctx, "throttle refund"); err != nil {
		return nil, err
	}
	raw, every, _ := throttleArgs(keys)
	full := make([]int64, len(keys))
	err := retry(ctx, func() error {
		clear(full)
		rows, err := s.pool.Query(ctx, throttleRefund, raw, unixNano(now), every)
		if err != nil {
			return err
		}
		err = scanStates(rows, raw, full, true)
		if retryable(err) {
			s.stats.retries.Add(1)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("throttle refund: %w", err)
	}
	return full, nil
}

// ThrottleAnnounce announces each key's state on [Channel], as
// [Store.ThrottleFail] announces a failure (an attempt charged by
// [Store.ThrottleCharge] failed: its charge stays), and returns it.
func (s *Store) ThrottleAnnounce(ctx context.Context, keys [][]byte) ([]int64, error) {
	if err := s.begin(ctx, "throttle announce"); err != nil {
		return nil, err
	}
	full := make([]int64, len(keys))
	err := retry(ctx, func() error {
		clear(full)
		rows, err := s.pool.Query(ctx, "WITH up AS (SELECT key, tat_ns FROM throttle WHERE key = ANY($1)) SELECT key, tat_ns"+throttleNotify, keys)
		if err != nil {
			return err
		}
		return scanStates(rows, keys, full, true)
	})
	if err != nil {
		return nil, fmt.Errorf("throttle announce: %w", err)
	}
	return full, nil
}

// throttleArgs are the arrays the throttle statements take: the keys,
// each rule's Every and its budget (Burst × Every) in nanoseconds.
func throttleArgs(keys []ThrottleKey) (raw [][]byte, every, caps []int64) {
	raw, every, caps = make([][]byte, len(keys)), make([]int64, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		raw[i], every[i], caps[i] = k.Key, int64(k.Rule.Every), int64(k.Rule.Burst)*int64(k.Rule.Every)
	}
	return raw, every, caps
}

// scanStates reads rows of (key, state) into full, at the index of each
// key in raw; notified rows have a third column, the announcement's
// (void) result.
func scanStates(rows pgx.Rows, raw [][]byte, full []int64, notified bool) error {
	var key []byte
	var tat int64
	dest := []any{&key, &tat}
	if notified {
		dest = append(dest, nil)
	}
	_, err := pgx.ForEachRow(rows, dest, func() error {
		for i, k := range raw {
			if slices.Equal(k, key) {
				full[i] = tat
			}
		}
		return nil
	})
	return err
}

// ThrottleLoad returns the state of each key (0 for a key without a row).
func (s *Store) ThrottleLoad(ctx context.Context, keys [][]byte) ([]int64, error) {
	if err := s.begin(ctx, "throttle load"); err != nil {
		return nil, err
	}
	full := make([]int64, len(keys))
	err := retry(ctx, func() error {
		rows, err := s.pool.Query(ctx, "SELECT key, tat_ns FROM throttle WHERE key = ANY($1)", keys)
		if err != nil {
			return err
		}
		return scanStates(rows, keys, full, false)
	})
	if err != nil {
		return nil, fmt.Errorf("throttle load: %w", err)
	}
	return full, nil
}

// ParseThrottleEvent reads the ID of an [Event] of kind "throttle": the
// key and its state after a failure.
func ParseThrottleEvent(id string) (key []byte, full int64, ok bool) {
	h, n, found := strings.Cut(id, " ")
	if !found {
		return nil, 0, false
	}
	key, err := hex.DecodeString(h)
	if err != nil {
		return nil, 0, false
	}
	full, err = strconv.ParseInt(n, 10, 64)
	return key, full, err == nil
}

// ThrottleGC removes the keys that hold no failure at now.
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
