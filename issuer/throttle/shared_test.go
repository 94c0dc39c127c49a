package throttle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// fakeStore is a Store in memory with the database's rules: failures
// capped at the budget, every change announced to every follower.
type fakeStore struct {
	mu        sync.Mutex
	full      map[string]int64
	held      map[string]int64 // attempts held, as full: a GCRA time
	followers map[string][]func(Key, int64)
	loads     int
	fails     int
	charges   int
	err       error // when set, every call fails
	deaf      bool  // when set, announcements are lost
}

func newFakeStore() *fakeStore {
	return &fakeStore{full: map[string]int64{}, held: map[string]int64{}, followers: map[string][]func(Key, int64){}}
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
	f.mu.Unlock()
	f.announce(limiter, keys)
	return nil
}

func (f *fakeStore) Charge(ctx context.Context, limiter string, now time.Time, keys []StoredKey) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return false, f.err
	}
	f.charges++
	t := now.UnixNano()
	ok := true
	for _, k := range keys {
		sk := storeKey(limiter, k.Key)
		if max(f.full[sk], t)-t+max(f.held[sk], t)+int64(k.Rule.Every)-t > int64(k.Rule.Burst)*int64(k.Rule.Every) {
			ok = false
		}
	}
	for i, k := range keys {
		sk := storeKey(limiter, k.Key)
		if ok {
			f.held[sk] = max(f.held[sk], t) + int64(k.Rule.Every)
		}
		keys[i].Full = f.full[sk]
	}
	return ok, nil
}

func (f *fakeStore) Settle(ctx context.Context, limiter string, now time.Time, keys []StoredKey, failed bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	if f.err != nil {
		f.mu.Unlock()
		return f.err
	}
	t := now.UnixNano()
	for i, k := range keys {
		sk := storeKey(limiter, k.Key)
		r := k.Rule
		f.held[sk] = max(f.held[sk]-int64(r.Every), t)
		if next := max(f.full[sk], t) + int64(r.Every); failed && next-t <= int64(r.Burst)*int64(r.Every) {
			f.full[sk] = next
		}
		keys[i].Full = f.full[sk]
	}
	f.mu.Unlock()
	if failed {
		f.announce(limiter, keys)
	}
	return nil
}

// announce passes each key's state to every follower of limiter, unless
// the store is deaf.
func (f *fakeStore) announce(limiter string, keys []StoredKey) {
	f.mu.Lock()
	fs, deaf := f.followers[limiter], f.deaf
	f.mu.Unlock()
	if deaf {
		return
	}
	for _, fn := range fs {
		for _, k := range keys {
			fn(k.Key, k.Full)
		}
	}
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

func (f *fakeStore) chargeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.charges
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

// loginReplicas returns n limiters sharing st, on one clock, with the
// login page's account rule alone (5, then one a minute).
func loginReplicas(n int, st Store, c *clock) []*Limiter {
	var ls []*Limiter
	for range n {
		ls = append(ls, New(Config{Name: "login", Rules: Rules{Account: {Burst: 5, Every: time.Minute}},
			Now: c.now, Shared: &Shared{Store: st, Secret: []byte("s")}}))
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
	if _, fails := st.counts(); fails+st.chargeCount() != 2 {
		t.Fatalf("2 failures under a cancelled context: %d counted in the store; want 2", fails+st.chargeCount())
	}
	if _, ok := ls[1].Check(ctx, keys(ls[1], "app", addrA)); ok {
		t.Fatal("the other replica lets the key through after its budget of 2 was spent")
	}
}

// TestSharedRefillOnceAcrossReplicas: when a used-up budget regains one
// attempt, three replicas that start an attempt each at that moment run
// one between them, not one each: an attempt under a key with failures
// is charged in the store before it runs.
func TestSharedRefillOnceAcrossReplicas(t *testing.T) {
	st := newFakeStore()
	c := &clock{t: t0}
	ls := replicas(3, st, c)
	for i := range 6 {
		fail(ls[i%3], keys(ls[i%3], "app", addrA))
	}
	for round := range 3 {
		c.advance(6 * time.Second) // the client key (2, one each 6 s) regains one
		var ran []Reservation
		for _, l := range ls {
			if r, _, err := l.Reserve(ctx, keys(l, "app", addrA), 0); err == nil {
				ran = append(ran, r)
			} else if !errors.Is(err, ErrLimited) && !errors.Is(err, ErrBusy) {
				t.Fatalf("round %d: Reserve = %v; want an attempt, or a refusal", round, err)
			}
		}
		if len(ran) != 1 {
			t.Fatalf("round %d: %d of 3 replicas ran an attempt after one was regained; want 1", round, len(ran))
		}
		for i := range ran {
			ran[i].Fail()
		}
	}
}

// TestSharedBurstBound: a burst of wrong passwords spread over three
// replicas, each running two checks at once (a login's password slots),
// in the worst order: every replica starts one check before any failure
// is known, then each starts all it is allowed while none has ended. The
// first check of each replica ran before anyone knew; every later one
// (the second has the first in flight beside it) is charged in the store,
// which has room for the budget of 5: 8 checks in all, never more, and
// after the burst nothing more runs anywhere. (Counting checks in flight
// per replica instead let each replica run its own budget: 15 here.)
func TestSharedBurstBound(t *testing.T) {
	st := newFakeStore()
	c := &clock{t: t0}
	ls := loginReplicas(3, st, c)
	var ks Keys
	ks.Add(UserKey(7, addrA))
	var running []Reservation
	for _, l := range ls {
		r, _, err := l.Reserve(ctx, ks, 0)
		if err != nil {
			t.Fatalf("first check: %v", err)
		}
		running = append(running, r)
	}
	for progress := true; progress; {
		progress = false
		for _, l := range ls {
			if r, _, err := l.Reserve(ctx, ks, 0); err == nil {
				running = append(running, r)
				progress = true
			}
		}
	}
	ran := len(running)
	for i := range running {
		running[i].Fail()
	}
	for i, l := range ls {
		if _, _, err := l.Reserve(ctx, ks, 0); !errors.Is(err, ErrLimited) {
			t.Errorf("replica %d after the burst: Reserve = %v; want ErrLimited", i, err)
		}
	}
	if want := 5 + 3; ran != want {
		t.Errorf("the burst ran %d password checks; want %d: the budget of 5 plus each replica's first", ran, want)
	}
}

// TestSharedRightPasswordsAcrossReplicas: a right password held on one
// replica while the same user's second try reaches another at the edge of
// the budget: the second waits for the first (its hold is no failure, and
// no replica ever counts it as one) and runs once it was given back, and
// the other replica's quick check never refuses the user meanwhile.
func TestSharedRightPasswordsAcrossReplicas(t *testing.T) {
	st := newFakeStore()
	c := &clock{t: t0}
	ls := loginReplicas(2, st, c)
	var ks Keys
	ks.Add(UserKey(7, addrA))
	for range 4 {
		fail(ls[0], ks)
	}
	r1, _, err := ls[0].Reserve(ctx, ks, 0) // the right password: 4 failures and 1 held
	if err != nil || r1.hold != HeldInStore {
		t.Fatalf("Reserve after 4 failures = %v, hold %v; want held in the store", err, r1.hold)
	}
	if _, _, err := ls[1].Reserve(ctx, ks, 0); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second try on the other replica while the last room is held = %v; want ErrBusy (wait), not ErrLimited", err)
	}
	if _, ok := ls[1].Check(ctx, ks); !ok {
		t.Fatal("the other replica's check refuses the user while a right password is held")
	}
	done := make(chan error)
	go func() {
		r2, _, err := ls[1].Reserve(ctx, ks, 5*time.Second)
		if err == nil {
			r2.Refund()
		}
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	r1.Refund()
	if err := <-done; err != nil {
		t.Fatalf("the second right password once the first was given back = %v; want to run", err)
	}
	if _, ok := ls[1].Check(ctx, ks); !ok {
		t.Fatal("after both right passwords, the other replica refuses the user")
	}
}

// TestSharedChargeGivenBack: right passwords under a key with failures
// are held and given back, so that any number of them leave the store's
// count where it was; two at once on one replica at the edge of the
// budget wait for each other (asking the store less and less often)
// rather than being refused; a store that fails to hold leaves the
// decision to the replica.
func TestSharedChargeGivenBack(t *testing.T) {
	st := newFakeStore()
	c := &clock{t: t0}
	ls := replicas(2, st, c)
	fail(ls[0], keys(ls[0], "app", addrA)) // 1 of the client key's 2
	for i := range 10 {
		r, _, err := ls[i%2].Reserve(ctx, keys(ls[i%2], "app", addrA), 0)
		if err != nil {
			t.Fatalf("right password %d: %v", i, err)
		}
		r.Refund()
	}
	if n := st.chargeCount(); n != 10 {
		t.Fatalf("10 attempts under a key with a failure: %d charges; want 10", n)
	}
	var ks []StoredKey
	ks = append(ks, StoredKey{Key: ls[0].NameKey(Client, "app", addrA)})
	if err := st.Load(ctx, "test", ks); err != nil || ks[0].Full != t0.Add(6*time.Second).UnixNano() {
		t.Fatalf("after 10 given back the store holds %v; want the one failure", ks[0].Full)
	}

	r1, _, err := ls[0].Reserve(ctx, keys(ls[0], "app", addrA), 0)
	if err != nil {
		t.Fatal(err)
	}
	before := st.chargeCount()
	done := make(chan error)
	go func() {
		r2, _, err := ls[0].Reserve(ctx, keys(ls[0], "app", addrA), 5*time.Second)
		if err == nil {
			r2.Refund()
		}
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	r1.Refund()
	if err := <-done; err != nil {
		t.Fatalf("a right password waiting on another of this replica = %v; want to run once it ended", err)
	}
	if n := st.chargeCount() - before; n > 9 {
		t.Errorf("a check waiting 200 ms for another asked the store %d times; want it to wait longer each time (at most 8 times)", n-1)
	}

	st.mu.Lock()
	st.err = errors.New("connection refused")
	st.mu.Unlock()
	r, _, err := ls[1].Reserve(ctx, keys(ls[1], "app", addrA), 0)
	if err != nil {
		t.Fatalf("store down: Reserve under a key with a failure = %v; want the replica to decide", err)
	}
	r.Refund()
}

// TestSharedOneUnchargedAtOnce: of attempts arriving at once on one
// replica under a key without failures, only one runs without being held
// in the store (the check and the count are one step), round after round.
func TestSharedOneUnchargedAtOnce(t *testing.T) {
	st := newFakeStore()
	c := &clock{t: t0}
	ls := replicas(1, st, c)
	for round := range 200 {
		ks := keys(ls[0], fmt.Sprintf("app%d", round), addrA)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var got []Reservation
		start := make(chan struct{})
		for range 4 {
			wg.Go(func() {
				<-start
				if r, _, err := ls[0].Reserve(ctx, ks, 0); err == nil {
					mu.Lock()
					got = append(got, r)
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		here := 0
		for i := range got {
			if got[i].hold == HeldHere {
				here++
			}
			got[i].Refund()
		}
		if here > 1 {
			t.Fatalf("round %d: %d attempts at once ran unheld in the store; want at most 1", round, here)
		}
	}
}
