package throttle

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeStore is a Store in memory with the database's rules: failures
// capped at the budget, every change announced to every follower.
type fakeStore struct {
	mu        sync.Mutex
	full      map[string]int64
	followers map[string][]func(Key, int64)
	loads     int
	fails     int
	err       error // when set, every call fails
	deaf      bool  // when set, announcements are lost
}

func newFakeStore() *fakeStore {
	return &fakeStore{full: map[string]int64{}, followers: map[string][]func(Key, int64){}}
}

func storeKey(limiter string, k Key) string {
	b, _ := k.AppendBinary([]byte(limiter + ":"))
	return string(b)
}

func (f *fakeStore) Load(_ context.Context, limiter string, keys []StoredKey) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.loads++
	for i := range keys {
		keys[i].Full = f.full[storeKey(limiter, keys[i].Key)]
	}
	return nil
}

func (f *fakeStore) Fail(ctx context.Context, limiter string, now time.Time, keys []StoredKey) error {
	if err := ctx.Err(); err != nil {
		return err // as the database's client does
	}
	f.mu.Lock()
	if f.err != nil {
		f.mu.Unlock()
		return f.err
	}
	f.fails++
	t := now.UnixNano()
	for i := range keys {
		sk := storeKey(limiter, keys[i].Key)
		r := keys[i].Rule
		if next := max(f.full[sk], t) + int64(r.Every); next-t <= int64(r.Burst)*int64(r.Every) {
			f.full[sk] = next
		}
		keys[i].Full = f.full[sk]
	}
	fs := f.followers[limiter]
	deaf := f.deaf
	f.mu.Unlock()
	if !deaf {
		for _, fn := range fs {
			for _, k := range keys {
				fn(k.Key, k.Full)
			}
		}
	}
	return nil
}

func (f *fakeStore) Follow(limiter string, learn func(Key, int64)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.followers[limiter] = append(f.followers[limiter], learn)
}

func (f *fakeStore) counts() (loads, fails int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.loads, f.fails
}

// replicas returns n limiters sharing st, on one clock.
func replicas(n int, st Store, c *clock) []*Limiter {
	sh := &Shared{Store: st, Secret: []byte("a secret every replica has")}
	var ls []*Limiter
	for range n {
		ls = append(ls, New(Config{Name: "test", Rules: testRules, Now: c.now, Shared: sh}))
	}
	return ls
}

// TestSharedBudgetAcrossReplicas: failures spread over three replicas
// (checked-then-failed, as the token endpoint does, and reserved-then-
// failed, as a login does) spend one budget, whichever replica counted
// them; another address is untouched on every replica.
func TestSharedBudgetAcrossReplicas(t *testing.T) {
	for _, deaf := range []bool{false, true} {
		st := newFakeStore()
		st.deaf = deaf
		c := &clock{t: t0}
		ls := replicas(3, st, c)
		checked, reserved := 0, 0
		for i := range 12 {
			l := ls[i%3]
			ks := keys(l, "app", addrA)
			if _, ok := l.Check(ctx, ks); ok {
				checked++
				l.Fail(ctx, ks)
			}
		}
		c.advance(time.Hour)
		for i := range 12 {
			if fail(ls[i%3], keys(ls[i%3], "app", addrA)) {
				reserved++
			}
		}
		// Without announcements a replica learns of the others' failures
		// only from its own first failure: one extra each.
		want := 2
		if deaf {
			want = 2 + 2
		}
		if checked > want || checked < 2 || reserved > want || reserved < 2 {
			t.Errorf("deaf %v: 12 failures over 3 replicas: %d checked, %d reserved; want the budget of 2 (at most %d)", deaf, checked, reserved, want)
		}
		if !deaf && (checked != 2 || reserved != 2) {
			t.Errorf("%d checked, %d reserved; want exactly 2", checked, reserved)
		}
		for i, l := range ls {
			if _, ok := l.Check(ctx, keys(l, "app", addrB)); !ok {
				t.Errorf("replica %d refuses the other address", i)
			}
			if _, ok := l.Check(ctx, keys(l, "app", addrA)); ok {
				t.Errorf("deaf %v: replica %d lets the exhausted key through", deaf, i)
			}
		}
	}
}

// TestSharedSuccessStaysLocal: attempts under keys without failures, and
// under keys with fewer than half their budget used, cost no round trip.
func TestSharedSuccessStaysLocal(t *testing.T) {
	st := newFakeStore()
	c := &clock{t: t0}
	ls := replicas(2, st, c)
	for i := range 100 {
		l := ls[i%2]
		if _, ok := l.Check(ctx, keys(l, "app", addrA)); !ok {
			t.Fatal("refused with no failure")
		}
		r, _, err := l.Reserve(ctx, keys(l, "app", addrA), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		r.Refund()
	}
	if loads, fails := st.counts(); loads != 0 || fails != 0 {
		t.Fatalf("200 successes: %d loads, %d fails in the store; want none", loads, fails)
	}
	// One failure of the address (budget 4) is not near: still local.
	var ks Keys
	ks.Add(AddrKey(addrA))
	ls[0].Fail(ctx, ks)
	for _, l := range ls {
		l.Check(ctx, ks)
	}
	if loads, fails := st.counts(); loads != 0 || fails != 1 {
		t.Fatalf("after one failure: %d loads, %d fails; want 0 and 1", loads, fails)
	}
	// A second one is half the budget: the next attempts read the store.
	ls[1].Fail(ctx, ks)
	ls[0].Check(ctx, ks)
	if loads, _ := st.counts(); loads != 1 {
		t.Fatalf("a key at half its budget: %d loads; want 1", loads)
	}
}

// TestSharedStoreDown: with the store failing, a replica decides from what
// it knows: nothing is refused that it has not itself seen fail, and its
// own failures still count.
func TestSharedStoreDown(t *testing.T) {
	st := newFakeStore()
	c := &clock{t: t0}
	ls := replicas(2, st, c)
	ls[0].Fail(ctx, keys(ls[0], "app", addrA)) // counted in the store
	st.mu.Lock()
	st.err = errors.New("connection refused")
	st.mu.Unlock()
	if _, ok := ls[1].Check(ctx, keys(ls[1], "app", addrA)); !ok {
		t.Fatal("store down: refused with one failure of two")
	}
	ls[1].Fail(ctx, keys(ls[1], "app", addrA)) // counted here only (and learned before)
	if _, ok := ls[1].Check(ctx, keys(ls[1], "app", addrA)); ok {
		t.Fatal("store down: the replica's own failures are not counted")
	}
	if _, ok := ls[1].Check(ctx, keys(ls[1], "app", addrB)); !ok {
		t.Fatal("store down: another address refused")
	}
	r, _, err := ls[0].Reserve(ctx, keys(ls[0], "other", addrB), time.Second)
	if err != nil {
		t.Fatalf("store down: Reserve = %v; want allowed", err)
	}
	r.Fail()
	r2, _, err := ls[0].Reserve(ctx, keys(ls[0], "other", addrB), time.Second)
	if err != nil {
		t.Fatalf("store down: Reserve after one failure = %v; want allowed", err)
	}
	r2.Refund()
}

// TestSharedNameKeys: replicas with the same secret agree on a name's key;
// another secret, or a limiter that shares nothing, does not.
func TestSharedNameKeys(t *testing.T) {
	c := &clock{t: t0}
	ls := replicas(2, newFakeStore(), c)
	other := New(Config{Shared: &Shared{Store: newFakeStore(), Secret: []byte("another")}})
	alone := New(Config{})
	k := ls[0].NameKey(Client, "app", addrA)
	if k != ls[1].NameKey(Client, "app", addrA) {
		t.Fatal("two replicas disagree on a name's key")
	}
	if k == other.NameKey(Client, "app", addrA) || k == alone.NameKey(Client, "app", addrA) || k == ls[0].NameKey(Client, "App", addrA) {
		t.Fatal("a name's key is the same under another secret, without one, or for another name")
	}
	var back Key
	b, _ := k.AppendBinary(nil)
	if err := back.UnmarshalBinary(b); err != nil || back != k || len(b) != KeyLen {
		t.Fatalf("binary round trip: %v %v", back, err)
	}
	if n := testing.AllocsPerRun(1000, func() {
		var ks Keys
		ks.Add(ls[0].NameKey(Client, "client-id-0123456789", addrA))
		ks.Add(AddrKey(addrA))
		ls[0].Check(ctx, ks)
	}); n != 0 {
		t.Errorf("a shared limiter's Check of a key without failures allocates %v times; want 0", n)
	}
}

// TestSharedFailAfterHangUp: a failure is counted in the store even when
// the request's context is already cancelled (the client hung up right
// after its guess): otherwise hanging up would keep every guess out of
// the shared count.
func TestSharedFailAfterHangUp(t *testing.T) {
	st := newFakeStore()
	c := &clock{t: t0}
	ls := replicas(2, st, c)
	gone, cancel := context.WithCancel(ctx)
	cancel()
	ls[0].Fail(gone, keys(ls[0], "app", addrA))
	r, _, err := ls[0].Reserve(ctx, keys(ls[0], "app", addrA), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	r.ctx = rctx
	cancel()
	r.Fail()
	if _, fails := st.counts(); fails != 2 {
		t.Fatalf("2 failures under a cancelled context: %d counted in the store; want 2", fails)
	}
	if _, ok := ls[1].Check(ctx, keys(ls[1], "app", addrA)); ok {
		t.Fatal("the other replica lets the key through after its budget of 2 was spent")
	}
}
