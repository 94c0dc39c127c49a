package postgres_test

import (
	"testing"
	"time"

	"oauthd/data/postgres"
)

// TestSharedThrottle: two replicas charging one key at once never let more
// than Burst attempts through, the limit lifts by itself, and a given-back
// attempt is available again.
func TestSharedThrottle(t *testing.T) {
	ss := twoStores(t)
	rule := postgres.ThrottleRule{Burst: 5, Every: time.Minute}
	user := postgres.ThrottleKey{Key: []byte("account:1@127.0.0.1"), Rule: rule}
	addr := postgres.ThrottleKey{Key: []byte("addr:127.0.0.1"), Rule: postgres.ThrottleRule{Burst: 20, Every: 15 * time.Second}}
	now := t0
	errs := race(30, ss, func(i int, s *postgres.Store) error {
		_, ex, err := s.ThrottleTake(ctx, now, []postgres.ThrottleKey{addr, user})
		if err == nil && ex >= 0 {
			return errRefused
		}
		return err
	})
	if ok, refused := count(errs, nil), count(errs, errRefused); ok != rule.Burst || refused != 30-rule.Burst {
		t.Fatalf("30 concurrent attempts on two replicas: %d let through, %d refused (errors %v); want %d and %d", ok, refused, errs, rule.Burst, 30-rule.Burst)
	}
	wait, ex, err := ss[1].ThrottleTake(ctx, now, []postgres.ThrottleKey{addr, user})
	if err != nil || ex != 1 || wait != time.Minute {
		t.Fatalf("ThrottleTake when exhausted = %v, %d, %v; want 1m, key 1 (the account)", wait, ex, err)
	}
	// A success gives its attempt back: one more is allowed.
	if err := ss[0].ThrottleGive(ctx, now, []postgres.ThrottleKey{addr, user}); err != nil {
		t.Fatal(err)
	}
	if _, ex, err := ss[1].ThrottleTake(ctx, now, []postgres.ThrottleKey{addr, user}); err != nil || ex != -1 {
		t.Fatalf("ThrottleTake after a give-back = %d, %v; want allowed", ex, err)
	}
	// One refills per minute; after Burst minutes the key holds nothing.
	if _, ex, _ := ss[0].ThrottleTake(ctx, now.Add(time.Minute), []postgres.ThrottleKey{user}); ex != -1 {
		t.Fatal("no attempt a minute later")
	}
	if n, err := ss[0].ThrottleGC(ctx, now.Add(time.Hour)); err != nil || n != 2 {
		t.Fatalf("ThrottleGC an hour later = %d, %v; want both keys removed", n, err)
	}
}

var errRefused = errorString("refused")

type errorString string

func (e errorString) Error() string { return string(e) }
