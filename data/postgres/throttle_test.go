package postgres_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"oauthd/data/postgres"
)

// throttleEvents returns the "throttle" events that s hears, from the
// moment it returns until the test ends.
func throttleEvents(t *testing.T, s *postgres.Store) <-chan postgres.Event {
	t.Helper()
	lctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	events := make(chan postgres.Event, 100)
	listening := make(chan struct{})
	go s.Listen(lctx, postgres.ListenOptions{}, func(_ context.Context, e postgres.Event) {
		if e.Reset {
			select {
			case <-listening:
			default:
				close(listening)
			}
			return
		}
		if e.Kind == "throttle" {
			events <- e
		}
	})
	<-listening
	return events
}

// TestSharedThrottle: 30 failures counted at once on two replicas charge
// the budget exactly, never past it; each charge is announced to every
// listener; the state is read back; the limit lifts by itself and the
// collector removes what lapsed.
func TestSharedThrottle(t *testing.T) {
	ss := twoStores(t)
	events := throttleEvents(t, ss[1])

	rule := postgres.ThrottleRule{Burst: 5, Every: time.Minute}
	user := postgres.ThrottleKey{Key: []byte("login:account 1@127.0.0.1"), Rule: rule}
	addr := postgres.ThrottleKey{Key: []byte("login:addr 127.0.0.1"), Rule: postgres.ThrottleRule{Burst: 20, Every: 15 * time.Second}}
	now := t0
	errs := race(30, ss, func(i int, s *postgres.Store) error {
		_, err := s.ThrottleFail(ctx, now, []postgres.ThrottleKey{addr, user})
		return err
	})
	if n := count(errs, nil); n != 30 {
		t.Fatalf("30 concurrent failures: %d succeeded: %v", n, errs)
	}
	full, err := ss[0].ThrottleLoad(ctx, [][]byte{user.Key, addr.Key, []byte("login:none")})
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{now.Add(5 * time.Minute).UnixNano(), now.Add(20 * 15 * time.Second).UnixNano(), 0}
	for i := range want {
		if full[i] != want[i] {
			t.Fatalf("state after 30 failures = %v; want %v (each budget used up exactly, never past it)", full, want)
		}
	}
	// One more is not counted, and returns the state all the same.
	got, err := ss[1].ThrottleFail(ctx, now, []postgres.ThrottleKey{user})
	if err != nil || got[0] != want[0] {
		t.Fatalf("a failure past the budget = %v, %v; want the state unchanged, %d", got, err, want[0])
	}
	// Every charge was announced: 5 of the account, 20 of the address.
	seen := map[string]int{}
	last := map[string]int64{}
	deadline := time.After(5 * time.Second)
	for len(seen) < 2 || seen[string(user.Key)] < 5 || seen[string(addr.Key)] < 20 {
		select {
		case e := <-events:
			k, f, ok := postgres.ParseThrottleEvent(e.ID)
			if !ok {
				t.Fatalf("unparsable throttle event %q", e.ID)
			}
			seen[string(k)]++
			last[string(k)] = max(last[string(k)], f)
		case <-deadline:
			t.Fatalf("announcements after 5 s: %v; want 5 and 20", seen)
		}
	}
	if last[string(user.Key)] != want[0] || last[string(addr.Key)] != want[1] {
		t.Fatalf("announced states %v; want %v", last, want[:2])
	}
	// One refills per minute.
	got, err = ss[0].ThrottleFail(ctx, now.Add(time.Minute), []postgres.ThrottleKey{user})
	if err != nil || got[0] != want[0]+int64(time.Minute) {
		t.Fatalf("a failure a minute later = %v, %v; want counted", got, err)
	}
	if n, err := ss[0].ThrottleGC(ctx, now.Add(time.Hour)); err != nil || n != 2 {
		t.Fatalf("ThrottleGC an hour later = %d, %v; want both keys removed", n, err)
	}
}

// TestThrottleCharge: 30 attempts held at once on two replicas under an
// account (5) and an address (20) get exactly the account's 5, and the
// address holds those 5 only (all keys or none); a refused charge returns
// the failures, which holds are not; holds are never announced; settling
// gives a hold back, and a failed one is counted and announced; failures
// and holds share the budget; the collector keeps a row while it holds an
// attempt.
func TestThrottleCharge(t *testing.T) {
	ss := twoStores(t)
	events := throttleEvents(t, ss[1])

	user := postgres.ThrottleKey{Key: []byte("login:account 2@127.0.0.1"), Rule: postgres.ThrottleRule{Burst: 5, Every: time.Minute}}
	addr := postgres.ThrottleKey{Key: []byte("login:addr 127.0.0.2"), Rule: postgres.ThrottleRule{Burst: 20, Every: 15 * time.Second}}
	both := []postgres.ThrottleKey{addr, user}
	now := t0
	var charged atomic.Int32
	errs := race(30, ss, func(i int, s *postgres.Store) error {
		_, ok, err := s.ThrottleCharge(ctx, now, both)
		if ok {
			charged.Add(1)
		}
		return err
	})
	if n := count(errs, nil); n != 30 || charged.Load() != 5 {
		t.Fatalf("30 concurrent charges: %d without error, %d charged; want 30 and 5: %v", n, charged.Load(), errs)
	}
	full, ok, err := ss[0].ThrottleCharge(ctx, now, both)
	if err != nil || ok || full[0] != 0 || full[1] != 0 {
		t.Fatalf("a charge past the account's budget = %v, %v, %v; want refused, no failures", full, ok, err)
	}
	// The address has room for 15 more: only the account refused, and
	// nothing of the address was held by the refused charges.
	other := postgres.ThrottleKey{Key: []byte("login:account 3@127.0.0.1"), Rule: user.Rule}
	for i := range 15 {
		if _, ok, err := ss[i%2].ThrottleCharge(ctx, now, []postgres.ThrottleKey{addr, other}); err != nil || !ok != (i >= 5) {
			t.Fatalf("charge %d of another account at the address = %v, %v; want the account's 5, then refused", i, ok, err)
		}
	}
	select {
	case e := <-events:
		t.Fatalf("a charge was announced (%q); want only failures announced", e.ID)
	case <-time.After(200 * time.Millisecond):
	}

	if _, err := ss[1].ThrottleSettle(ctx, now, both, false); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ss[0].ThrottleCharge(ctx, now, both); err != nil || !ok {
		t.Fatalf("a charge after one was given back = %v, %v; want room for it", ok, err)
	}
	full, err = ss[0].ThrottleSettle(ctx, now, both, true)
	want := []int64{now.Add(15 * time.Second).UnixNano(), now.Add(time.Minute).UnixNano()}
	if err != nil || full[0] != want[0] || full[1] != want[1] {
		t.Fatalf("a failed settle = %v, %v; want the failures %v", full, err, want)
	}
	got := map[string]int64{}
	for len(got) < 2 {
		select {
		case e := <-events:
			k, f, ok := postgres.ParseThrottleEvent(e.ID)
			if !ok {
				t.Fatalf("unparsable throttle event %q", e.ID)
			}
			got[string(k)] = f
		case <-time.After(5 * time.Second):
			t.Fatalf("announcements of the failure after 5 s: %v; want both keys", got)
		}
	}
	if got[string(addr.Key)] != want[0] || got[string(user.Key)] != want[1] {
		t.Fatalf("announced %v; want %v", got, want)
	}
	// 1 failure and 4 held: the account is full until one is given back.
	if _, ok, _ := ss[1].ThrottleCharge(ctx, now, both); ok {
		t.Fatal("a charge with 1 failure and 4 held of 5; want refused")
	}
	if _, err := ss[1].ThrottleSettle(ctx, now, both, false); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ss[1].ThrottleCharge(ctx, now, both); err != nil || !ok {
		t.Fatalf("a charge with 1 failure and 3 held of 5 = %v, %v; want room", ok, err)
	}

	// Holds a crashed replica never settled lapse by themselves, and the
	// collector keeps a row while it holds an attempt.
	fresh := postgres.ThrottleKey{Key: []byte("login:account 4@127.0.0.1"), Rule: user.Rule}
	if _, ok, err := ss[0].ThrottleCharge(ctx, now.Add(10*time.Minute), []postgres.ThrottleKey{fresh}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if n, err := ss[0].ThrottleGC(ctx, now.Add(10*time.Minute+time.Second)); err != nil || n != 3 {
		t.Fatalf("ThrottleGC = %d, %v; want the 3 lapsed rows removed and the held one kept", n, err)
	}
	if _, ok, err := ss[0].ThrottleCharge(ctx, now.Add(time.Hour), both); err != nil || !ok {
		t.Fatalf("a charge an hour later = %v, %v; want everything lapsed", ok, err)
	}
	// The collector removed one of two rows between a charge and its
	// failed settle (its hold had lapsed): the failure is counted once on
	// each key.
	later := now.Add(2 * time.Hour)
	if _, ok, err := ss[0].ThrottleCharge(ctx, later, both); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := ss[0].ThrottleGC(ctx, later.Add(30*time.Second)); err != nil { // the address's 15 s hold lapsed
		t.Fatal(err)
	}
	settled := later.Add(30 * time.Second)
	full, err = ss[1].ThrottleSettle(ctx, settled, both, true)
	if want := []int64{settled.Add(15 * time.Second).UnixNano(), settled.Add(time.Minute).UnixNano()}; err != nil || full[0] != want[0] || full[1] != want[1] {
		t.Fatalf("a failed settle after the collector = %v, %v; want %v (one failure each)", full, err, want)
	}
}
