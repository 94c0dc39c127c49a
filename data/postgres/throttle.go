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
const throttleFail = `WITH n AS (SELECT * FROM unnest($1::bytea[], $3::bigint[], $4::bigint[]) AS n(k, every, cap)),
up AS (
	INSERT INTO throttle AS t (key, tat_ns)
	SELECT k, $2::bigint + every FROM n ORDER BY k
	ON CONFLICT (key) DO UPDATE SET tat_ns = GREATEST(t.tat_ns, $2::bigint) + (EXCLUDED.tat_ns - $2::bigint)
	WHERE GREATEST(t.tat_ns, $2::bigint) + (EXCLUDED.tat_ns - $2::bigint) - $2::bigint <= (SELECT cap FROM n WHERE n.k = t.key)
	RETURNING key, tat_ns
)
SELECT key, tat_ns` + throttleNotify

// throttleNotify ends a statement that announces the failures of the
// rows of up.
const throttleNotify = `, pg_notify('` + Channel + `', 'throttle ' || encode(key, 'hex') || ' ' || tat_ns) FROM up`

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
		_, err = scanStates(rows, raw, full, true)
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

// throttleCharge holds one attempt of every key whose failures and held
// attempts leave room for it, in key order as throttleFail, and returns
// the key and its failures (tat_ns) of each held one.
const throttleCharge = `WITH n AS (SELECT * FROM unnest($1::bytea[], $3::bigint[], $4::bigint[]) AS n(k, every, cap)),
up AS (
	INSERT INTO throttle AS t (key, tat_ns, held_ns)
	SELECT k, 0, $2::bigint + every FROM n ORDER BY k
	ON CONFLICT (key) DO UPDATE SET held_ns = GREATEST(t.held_ns, $2::bigint) + (EXCLUDED.held_ns - $2::bigint)
	WHERE GREATEST(t.tat_ns, $2::bigint) - $2::bigint + GREATEST(t.held_ns, $2::bigint) + (EXCLUDED.held_ns - $2::bigint) - $2::bigint
		<= (SELECT cap FROM n WHERE n.k = t.key)
	RETURNING key, tat_ns
)
SELECT key, tat_ns FROM up`

// errNoRoom rolls back a charge that a key's budget had no room for.
var errNoRoom = errors.New("throttle: no room")

// ThrottleCharge holds an attempt about to run against every key, all or
// none: if each key's failures plus its attempts already held leave room
// in its budget, it holds one more of each (committed, not announced:
// the attempt may yet succeed); otherwise the transaction is rolled back
// and ok is false. It returns each key's failures (the state
// [Store.ThrottleFail] returns), never the attempts held. End the attempt
// with [Store.ThrottleSettle].
func (s *Store) ThrottleCharge(ctx context.Context, now time.Time, keys []ThrottleKey) (full []int64, ok bool, err error) {
	if err := s.begin(ctx, "throttle charge"); err != nil {
		return nil, false, err
	}
	raw, every, caps := throttleArgs(keys)
	full = make([]int64, len(keys))
	err = s.tx(ctx, func(tx pgx.Tx) error {
		clear(full)
		rows, err := tx.Query(ctx, throttleCharge, raw, unixNano(now), every, caps)
		if err != nil {
			return err
		}
		n, err := scanStates(rows, raw, full, false)
		if err == nil && n < len(keys) {
			err = errNoRoom
		}
		return err
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

// throttleSettle ends an attempt held by throttleCharge: it gives the
// hold back and, with $5, counts the failure as throttleFail does (never
// past the budget), locking the rows in key order.
const throttleSettle = `WITH n AS (SELECT * FROM unnest($1::bytea[], $3::bigint[], $4::bigint[]) AS n(k, every, cap)),
l AS (SELECT t.key FROM throttle t JOIN n ON t.key = n.k ORDER BY t.key FOR UPDATE OF t),
up AS (
	UPDATE throttle t SET held_ns = GREATEST(t.held_ns - n.every, $2::bigint),
		tat_ns = CASE WHEN $5::boolean AND GREATEST(t.tat_ns, $2::bigint) + n.every - $2::bigint <= n.cap
			THEN GREATEST(t.tat_ns, $2::bigint) + n.every ELSE t.tat_ns END
	FROM n, l WHERE t.key = n.k AND l.key = t.key
	RETURNING t.key, t.tat_ns
)
SELECT key, tat_ns`

// ThrottleSettle ends an attempt held by [Store.ThrottleCharge]: the hold
// is given back and, if failed, the failure is counted and announced as
// [Store.ThrottleFail] counts it. It returns each key's failures after.
func (s *Store) ThrottleSettle(ctx context.Context, now time.Time, keys []ThrottleKey, failed bool) ([]int64, error) {
	if err := s.begin(ctx, "throttle settle"); err != nil {
		return nil, err
	}
	raw, every, caps := throttleArgs(keys)
	q := throttleSettle + " FROM up"
	if failed {
		q = throttleSettle + throttleNotify
	}
	full := make([]int64, len(keys))
	var n int
	err := retry(ctx, func() error {
		clear(full)
		rows, err := s.pool.Query(ctx, q, raw, unixNano(now), every, caps, failed)
		if err != nil {
			return err
		}
		n, err = scanStates(rows, raw, full, failed)
		if retryable(err) {
			s.stats.retries.Add(1)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("throttle settle: %w", err)
	}
	if failed && n < len(keys) {
		// A row the collector removed meanwhile (the hold had lapsed):
		// the failure is counted there all the same. (A row found has
		// failures after a failed settle: its state is not 0.)
		var gone []ThrottleKey
		var at []int
		for i, k := range keys {
			if full[i] == 0 {
				gone, at = append(gone, k), append(at, i)
			}
		}
		got, err := s.ThrottleFail(ctx, now, gone)
		if err != nil {
			return nil, err
		}
		for j, i := range at {
			full[i] = got[j]
		}
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

// scanStates reads rows of (key, failures) into full, at the index of
// each key in raw, and returns how many it read; notified rows have a
// third column, the announcement's (void) result.
func scanStates(rows pgx.Rows, raw [][]byte, full []int64, notified bool) (int, error) {
	var key []byte
	var tat int64
	dest := []any{&key, &tat}
	if notified {
		dest = append(dest, nil)
	}
	n := 0
	_, err := pgx.ForEachRow(rows, dest, func() error {
		n++
		for i, k := range raw {
			if slices.Equal(k, key) {
				full[i] = tat
			}
		}
		return nil
	})
	return n, err
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
		_, err = scanStates(rows, keys, full, false)
		return err
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

// ThrottleGC removes the keys that hold no failure and no attempt at now.
func (s *Store) ThrottleGC(ctx context.Context, now time.Time) (int, error) {
	if err := s.begin(ctx, "throttle gc"); err != nil {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, "DELETE FROM throttle WHERE tat_ns < $1 AND held_ns < $1", unixNano(now))
	if err != nil {
		return 0, fmt.Errorf("throttle gc: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
