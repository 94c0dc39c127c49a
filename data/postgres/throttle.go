package postgres

import (
	"context"
	"encoding/hex"
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
SELECT key, tat_ns, pg_notify('` + Channel + `', 'throttle ' || encode(key, 'hex') || ' ' || tat_ns) FROM up`

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
	raw := make([][]byte, len(keys))
	every := make([]int64, len(keys))
	caps := make([]int64, len(keys))
	for i, k := range keys {
		raw[i], every[i], caps[i] = k.Key, int64(k.Rule.Every), int64(k.Rule.Burst)*int64(k.Rule.Every)
	}
	full := make([]int64, len(keys))
	missing := len(keys)
	err := retry(ctx, func() error {
		missing = len(keys)
		clear(full)
		rows, err := s.pool.Query(ctx, throttleFail, raw, unixNano(now), every, caps)
		if err != nil {
			return err
		}
		var key []byte
		var tat int64
		_, err = pgx.ForEachRow(rows, []any{&key, &tat, nil}, func() error {
			for i, k := range raw {
				if slices.Equal(k, key) && full[i] == 0 {
					full[i] = tat
					missing--
				}
			}
			return nil
		})
		if retryable(err) {
			s.stats.retries.Add(1)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("throttle fail: %w", err)
	}
	if missing > 0 {
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
		var key []byte
		var tat int64
		_, err = pgx.ForEachRow(rows, []any{&key, &tat}, func() error {
			for i, k := range keys {
				if slices.Equal(k, key) {
					full[i] = tat
				}
			}
			return nil
		})
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
