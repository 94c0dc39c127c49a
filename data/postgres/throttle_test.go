package postgres_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"oauthd/data/postgres"
)

// TestSharedThrottle: 30 failures counted at once on two replicas charge
// the budget exactly, never past it; each charge is announced to every
// listener; the state is read back; the limit lifts by itself and the
// collector removes what lapsed.
func TestSharedThrottle(t *testing.T) {
	ss := twoStores(t)
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan postgres.Event, 100)
	listening := make(chan struct{})
	go ss[1].Listen(lctx, postgres.ListenOptions{}, func(_ context.Context, e postgres.Event) {
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

// TestThrottleCharge: 30 attempts charged at once on two replicas under
// an account (5) and an address (20) get exactly the account's 5 charges,
// and the address is charged for those 5 only (all keys or none); a
// refused charge returns the states unchanged; a charge is not announced,
// a refund gives one back and announces the state after, ThrottleAnnounce
// announces a state, and a refund of a lapsed key leaves it lapsed.
func TestThrottleCharge(t *testing.T) {
	ss := twoStores(t)
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan postgres.Event, 100)
	listening := make(chan struct{})
	go ss[1].Listen(lctx, postgres.ListenOptions{}, func(_ context.Context, e postgres.Event) {
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

	user := postgres.ThrottleKey{Key: []byte("login:account 2@127.0.0.1"), Rule: postgres.ThrottleRule{Burst: 5, Every: time.Minute}}
	addr := postgres.ThrottleKey{Key: []byte("login:addr 127.0.0.2"), Rule: postgres.ThrottleRule{Burst: 20, Every: 15 * time.Second}}
	now := t0
	var charged atomic.Int32
	errs := race(30, ss, func(i int, s *postgres.Store) error {
		_, ok, err := s.ThrottleCharge(ctx, now, []postgres.ThrottleKey{addr, user})
		if ok {
			charged.Add(1)
		}
		return err
	})
	if n := count(errs, nil); n != 30 || charged.Load() != 5 {
		t.Fatalf("30 concurrent charges: %d without error, %d charged; want 30 and 5: %v", n, charged.Load(), errs)
	}
	want := []int64{now.Add(5 * 15 * time.Second).UnixNano(), now.Add(5 * time.Minute).UnixNano()}
	full, ok, err := ss[0].ThrottleCharge(ctx, now, []postgres.ThrottleKey{addr, user})
	if err != nil || ok || full[0] != want[0] || full[1] != want[1] {
		t.Fatalf("a charge past the account's budget = %v, %v, %v; want refused with the states %v", full, ok, err, want)
	}
	select {
	case e := <-events:
		t.Fatalf("a charge was announced (%q); want only failures announced", e.ID)
	case <-time.After(200 * time.Millisecond):
	}

	full, err = ss[1].ThrottleRefund(ctx, now, []postgres.ThrottleKey{addr, user})
	if err != nil || full[0] != want[0]-int64(15*time.Second) || full[1] != want[1]-int64(time.Minute) {
		t.Fatalf("refund = %v, %v; want one charge back of each", full, err)
	}
	// The refund is announced, so that no replica goes on counting it.
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
			t.Fatalf("refund announcements after 5 s: %v; want both keys", got)
		}
	}
	if got[string(addr.Key)] != full[0] || got[string(user.Key)] != full[1] {
		t.Fatalf("refund announced %v; want the states after, %v", got, full)
	}
	if _, ok, err := ss[0].ThrottleCharge(ctx, now, []postgres.ThrottleKey{addr, user}); err != nil || !ok {
		t.Fatalf("a charge after a refund = %v, %v; want room for it", ok, err)
	}
	full, err = ss[0].ThrottleAnnounce(ctx, [][]byte{user.Key})
	if err != nil || full[0] != want[1] {
		t.Fatalf("announce = %v, %v; want the account's state %d", full, err, want[1])
	}
	select {
	case e := <-events:
		k, f, ok := postgres.ParseThrottleEvent(e.ID)
		if !ok || string(k) != string(user.Key) || f != want[1] {
			t.Fatalf("announced %q; want the account at %d", e.ID, want[1])
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing announced after 5 s")
	}

	later := now.Add(time.Hour)
	full, err = ss[0].ThrottleRefund(ctx, later, []postgres.ThrottleKey{user, {Key: []byte("login:none"), Rule: user.Rule}})
	if err != nil || full[0] != later.UnixNano() || full[1] != 0 {
		t.Fatalf("refund of a lapsed key and of one without a row = %v, %v; want %d and 0", full, err, later.UnixNano())
	}
}
