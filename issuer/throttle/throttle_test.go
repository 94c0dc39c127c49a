package throttle

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var ctx = context.Background()

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var testRules = Rules{
	Addr:   {Burst: 4, Every: 15 * time.Second},
	Client: {Burst: 2, Every: 6 * time.Second},
}

func newTest(t *testing.T, maxKeys int) (*Limiter, *clock, *prometheus.Registry) {
	t.Helper()
	c := &clock{t: t0}
	reg := prometheus.NewRegistry()
	return New(Config{Name: "test", Rules: testRules, MaxKeys: maxKeys, Now: c.now, Registerer: reg}), c, reg
}

var (
	addrA = netip.MustParseAddr("127.0.0.2")
	addrB = netip.MustParseAddr("127.0.0.3")
)

// fail runs one failed attempt (reserved, then failed) and reports
// whether it was allowed to run.
func fail(l *Limiter, ks Keys) bool {
	r, _, err := l.Reserve(context.Background(), ks, 0)
	if err != nil {
		return false
	}
	r.Fail()
	return true
}

func keys(l *Limiter, client string, addr netip.Addr) Keys {
	var ks Keys
	ks.Add(l.NameKey(Client, client, addr))
	ks.Add(AddrKey(addr))
	return ks
}

// TestReserveBurstAndRefill: Burst attempts pass, the next is refused
// with the time until one is regained, and one more passes after Every.
func TestReserveBurstAndRefill(t *testing.T) {
	l, c, _ := newTest(t, 0)
	for i := range 2 {
		if !fail(l, keys(l, "app", addrA)) {
			t.Fatalf("attempt %d refused; want the burst of 2 to pass", i+1)
		}
	}
	_, wait, err := l.Reserve(context.Background(), keys(l, "app", addrA), time.Second)
	if !errors.Is(err, ErrLimited) || wait != 6*time.Second {
		t.Fatalf("3rd attempt: err %v wait %v; want ErrLimited, 6s", err, wait)
	}
	c.advance(6 * time.Second)
	if !fail(l, keys(l, "app", addrA)) {
		t.Fatal("after one interval: refused; want one attempt regained")
	}
	if fail(l, keys(l, "app", addrA)) {
		t.Fatal("second attempt after one interval passed; want only one regained")
	}
}

// TestOtherAddressUnaffected: exhausting (client, A) and A leaves
// (client, B) whole: the holder of the credentials at B gets through.
func TestOtherAddressUnaffected(t *testing.T) {
	l, _, _ := newTest(t, 0)
	for range 10 {
		fail(l, keys(l, "app", addrA))
	}
	if fail(l, keys(l, "app", addrA)) {
		t.Fatal("flooding address not limited")
	}
	for i := range 2 {
		if !fail(l, keys(l, "app", addrB)) {
			t.Fatalf("attempt %d from the other address refused", i+1)
		}
	}
}

// TestAddressCeiling: spraying many clients from one address stops at the
// address's budget although each client key is fresh.
func TestAddressCeiling(t *testing.T) {
	l, _, reg := newTest(t, 0)
	for i := range 4 {
		if !fail(l, keys(l, "c"+string(rune('a'+i)), addrA)) {
			t.Fatalf("client %d refused before the address ceiling", i)
		}
	}
	if fail(l, keys(l, "fresh", addrA)) {
		t.Fatal("5th client from the address passed; want the ceiling of 4")
	}
	got := refusedCounts(t, reg)
	if got["addr"] != 1 || got["client"] != 0 || len(got) != int(numKinds) {
		t.Errorf("oauthd_throttle_refused_total = %v; want addr 1, the other kinds 0", got)
	}
}

// TestAllOrNothing: an attempt refused by one key counts against none.
func TestAllOrNothing(t *testing.T) {
	l, _, _ := newTest(t, 0)
	fail(l, keys(l, "app", addrA))
	fail(l, keys(l, "app", addrA)) // (app, A) exhausted, A has 2 of 4 left
	for range 5 {
		fail(l, keys(l, "app", addrA)) // refused: must not use A's budget
	}
	for i := range 2 {
		if !fail(l, keys(l, "other", addrA)) {
			t.Fatalf("other client %d refused: refused attempts used the address's budget", i+1)
		}
	}
}

// TestRefund: successes (reserved, then refunded) never use the budget
// and leave no key behind.
func TestRefund(t *testing.T) {
	l, _, _ := newTest(t, 0)
	for i := range 100 {
		r, _, err := l.Reserve(context.Background(), keys(l, "app", addrA), 0)
		if err != nil {
			t.Fatalf("success %d refused: %v", i+1, err)
		}
		r.Refund()
		r.Refund() // twice is harmless
		r.Fail()   // and so is Fail after Refund
	}
	if n := l.c.(*Memory).Len(); n != 0 {
		t.Errorf("%d keys left after successes; want 0", n)
	}
	var zero Reservation
	zero.Refund()
}

// TestForgetsWholeKeys: a key whose budget is whole again is deleted.
func TestForgetsWholeKeys(t *testing.T) {
	l, c, _ := newTest(t, 0)
	fail(l, keys(l, "app", addrA))
	c.advance(time.Minute)
	r, _, _ := l.Reserve(context.Background(), keys(l, "app", addrB), 0)
	r.Refund()
	m := l.c.(*Memory)
	if n := m.Len(); n != 2 {
		t.Fatalf("keys = %d; want 2 (A's not yet swept)", n)
	}
	m.mu.Lock()
	m.makeRoom(c.now().UnixNano())
	m.mu.Unlock()
	if n := m.Len(); n != 0 {
		t.Errorf("keys after a sweep = %d; want 0", n)
	}
}

// TestBounded: a spray of distinct addresses never holds more than
// MaxKeys keys, and a full map never refuses anyone.
func TestBounded(t *testing.T) {
	l, _, _ := newTest(t, 50)
	for i := range 1000 {
		a := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
		fail(l, keys(l, "app", a))
		if n := l.c.(*Memory).Len(); n > 50 {
			t.Fatalf("%d keys after %d addresses; want ≤ 50", n, i+1)
		}
	}
	if !fail(l, keys(l, "y", addrA)) {
		t.Error("a fresh key refused while the map is full")
	}
}

// TestIPv6Prefix: the addresses of one IPv6 /64 share their keys; an
// IPv4-mapped address is its IPv4 address.
func TestIPv6Prefix(t *testing.T) {
	l, _, _ := newTest(t, 0)
	for i := range 4 {
		a := netip.MustParseAddr("2001:db8:1:2::" + string(rune('a'+i)))
		if !fail(l, keys(l, "c"+string(rune('a'+i)), a)) {
			t.Fatalf("attempt %d refused", i)
		}
	}
	if fail(l, keys(l, "z", netip.MustParseAddr("2001:db8:1:2:ffff::1"))) {
		t.Error("another address of the same /64 passed; want the /64's ceiling")
	}
	if !fail(l, keys(l, "z", netip.MustParseAddr("2001:db8:1:3::1"))) {
		t.Error("another /64 refused")
	}
	if AddrKey(ParseAddr("::ffff:127.0.0.2")) != AddrKey(addrA) {
		t.Error("IPv4-mapped address keyed apart from its IPv4 address")
	}
	if ParseAddr("junk").IsValid() {
		t.Error("ParseAddr(junk) is valid")
	}
}

// TestConcurrentReserve: of many wrong attempts started at once, exactly
// the budget runs (counted when they start, not when they end); the rest
// are refused once those have failed.
func TestConcurrentReserve(t *testing.T) {
	l, _, _ := newTest(t, 0)
	var wg sync.WaitGroup
	var ran, limited atomic.Int32
	for range 200 {
		wg.Go(func() {
			r, _, err := l.Reserve(context.Background(), keys(l, "app", addrA), time.Minute)
			switch {
			case err == nil:
				ran.Add(1)
				time.Sleep(time.Millisecond) // the check
				r.Fail()
			case errors.Is(err, ErrLimited):
				limited.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if ran.Load() != 2 || limited.Load() != 198 {
		t.Errorf("%d of 200 concurrent wrong attempts ran, %d limited; want 2 and 198", ran.Load(), limited.Load())
	}
}

// TestConcurrentSuccesses: right credentials arriving at once, many more
// than the budget, all run: while the attempts in flight hold the budget,
// Reserve waits for them, and each success gives its place back.
func TestConcurrentSuccesses(t *testing.T) {
	l, _, _ := newTest(t, 0)
	var wg sync.WaitGroup
	var ran atomic.Int32
	for range 50 {
		wg.Go(func() {
			r, _, err := l.Reserve(context.Background(), keys(l, "app", addrA), 10*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			defer r.Refund()
			time.Sleep(time.Millisecond) // the check
			ran.Add(1)
		})
	}
	wg.Wait()
	if ran.Load() != 50 {
		t.Errorf("%d of 50 concurrent successes ran; want 50", ran.Load())
	}
	if n := l.c.(*Memory).Len(); n != 0 {
		t.Errorf("%d keys left; want 0", n)
	}
}

// TestReserveBusy: when attempts in flight hold the remaining budget and
// do not end, Reserve gives up after maxWait (ErrBusy), or with ctx.
func TestReserveBusy(t *testing.T) {
	l, _, _ := newTest(t, 0)
	r1, _, _ := l.Reserve(context.Background(), keys(l, "app", addrA), 0)
	r2, _, _ := l.Reserve(context.Background(), keys(l, "app", addrA), 0)
	if _, _, err := l.Reserve(context.Background(), keys(l, "app", addrA), 20*time.Millisecond); !errors.Is(err, ErrBusy) {
		t.Errorf("Reserve with the budget in flight = %v; want ErrBusy", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := l.Reserve(ctx, keys(l, "app", addrA), time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Reserve with a cancelled ctx = %v; want context.Canceled", err)
	}
	r1.Fail()
	r2.Fail()
	if _, _, err := l.Reserve(context.Background(), keys(l, "app", addrA), time.Hour); !errors.Is(err, ErrLimited) {
		t.Errorf("Reserve after the attempts in flight failed = %v; want ErrLimited at once", err)
	}
}

// TestCheckFail: Check counts nothing, so any number of concurrent
// successes pass; Fail counts, and Check then refuses.
func TestCheckFail(t *testing.T) {
	l, c, _ := newTest(t, 0)
	var wg sync.WaitGroup
	var refused sync.Map
	for i := range 100 {
		wg.Go(func() {
			if _, ok := l.Check(ctx, keys(l, "app", addrA)); !ok {
				refused.Store(i, true)
			}
		})
	}
	wg.Wait()
	refused.Range(func(k, _ any) bool { t.Errorf("check %v refused with no failure counted", k); return false })
	l.Fail(ctx, keys(l, "app", addrA))
	l.Fail(ctx, keys(l, "app", addrA))
	if wait, ok := l.Check(ctx, keys(l, "app", addrA)); ok || wait != 6*time.Second {
		t.Errorf("Check after 2 failures: ok %v wait %v; want refused, 6s", ok, wait)
	}
	if _, ok := l.Check(ctx, keys(l, "app", addrB)); !ok {
		t.Error("the other address refused")
	}
	c.advance(6 * time.Second)
	if _, ok := l.Check(ctx, keys(l, "app", addrA)); !ok {
		t.Error("refused after the budget refilled")
	}
}

func TestReserveRefundAllocs(t *testing.T) {
	l, _, _ := newTest(t, 0)
	ks := keys(l, "app", addrA)
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() {
		r, _, _ := l.Reserve(ctx, ks, time.Second)
		r.Refund()
	}); n != 0 {
		t.Errorf("Reserve+Refund allocates %v times; want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { l.Check(ctx, ks) }); n != 0 {
		t.Errorf("Check allocates %v times; want 0", n)
	}
}

func BenchmarkReserveRefund(b *testing.B) {
	l := New(Config{Rules: testRules})
	a := netip.MustParseAddr("127.0.0.2")
	for b.Loop() {
		var ks Keys
		ks.Add(l.NameKey(Client, "client-id-0123456789", a))
		ks.Add(AddrKey(a))
		r, _, _ := l.Reserve(context.Background(), ks, time.Second)
		r.Refund()
	}
}

func BenchmarkCheck(b *testing.B) {
	l := New(Config{Rules: testRules})
	a := netip.MustParseAddr("127.0.0.2")
	for b.Loop() {
		var ks Keys
		ks.Add(l.NameKey(Client, "client-id-0123456789", a))
		ks.Add(AddrKey(a))
		l.Check(ctx, ks)
	}
}

// refusedCounts reads oauthd_throttle_refused_total by key label.
func refusedCounts(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "oauthd_throttle_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "key" {
					got[lp.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return got
}
