package throttle

import (
	"context"
	"errors"
	"hash/maphash"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Kind says what a [Key] counts.
type Kind uint8

// The kinds of key. Every kind but Addr pairs an identifier with the
// source address.
const (
	// Addr is the source address alone: the ceiling of all failures from
	// one address (one IPv4 address, or one IPv6 /64).
	Addr Kind = iota
	// Client is a client ID at an address.
	Client
	// Account is a user, by user ID whatever login name was typed, at an
	// address.
	Account
	// Login is a login name that names no user (lower-cased), at an
	// address: it is limited like an account, so that the limit does not
	// tell known logins from unknown ones.
	Login

	numKinds
)

var kindNames = [numKinds]string{"addr", "client", "account", "login"}

// String returns the kind's metric label: addr, client, account or login.
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "unknown"
}

// Key is one counter: a kind, an identifier (a user ID, or the hash of a
// client ID or login name; 0 for Addr) and a source address. It holds no
// pointer and no string, so a map of keys retains nothing of a request
// and the garbage collector does not scan it.
type Key struct {
	Kind Kind
	ID   uint64
	Addr [16]byte
}

// Keys are the keys one attempt is counted against (at most [MaxKeys]).
// It is a value: building and passing it allocates nothing.
type Keys struct {
	n int
	k [MaxKeys]Key
}

// MaxKeys is how many keys one attempt may be counted against.
const MaxKeys = 3

// Add appends k; past [MaxKeys] it panics (a programming error).
func (ks *Keys) Add(k Key) {
	ks.k[ks.n] = k
	ks.n++
}

// Len returns the number of keys.
func (ks *Keys) Len() int { return ks.n }

// At returns the i-th key.
func (ks *Keys) At(i int) Key { return ks.k[i] }

// Rule is the budget of one kind of key: Burst failures at once, and one
// more each Every after that. A key that has not failed for Burst×Every
// is forgotten: every limit lifts by itself.
type Rule struct {
	Burst int
	Every time.Duration
}

// Rules are the rules of each kind, indexed by [Kind]. A kind whose Rule
// has Burst 0 is not limited.
type Rules [numKinds]Rule

// Counter holds the counts. [Memory] keeps them in this process; a
// counter shared by replicas ([Config.Shared]) keeps the failures in a
// [Store] and the rest here. Every method takes the keys of one attempt,
// all or none. None returns an error: a counter that cannot reach its
// store decides from what this process knows (it fails open, never shut:
// an unreachable database must not lock anyone out) and reports the
// failure itself.
type Counter interface {
	// Peek returns -1 when no key of ks has used up its failures at now;
	// otherwise the index of one that has, and how long until every key
	// has an attempt again.
	Peek(ctx context.Context, now time.Time, ks Keys) (wait time.Duration, exhausted int)
	// Start begins an attempt under ks and returns -1 if every key's
	// failures plus the attempts in flight leave room for it, and how the
	// attempt holds its budget. If a key's failures alone leave none it
	// starts nothing and returns the index and wait as Peek; if only the
	// attempts in flight take the room, it starts nothing and returns busy
	// (those may yet succeed).
	Start(ctx context.Context, now time.Time, ks Keys) (wait time.Duration, exhausted int, busy bool, hold Hold)
	// End ends an attempt begun by Start (hold as Start returned it),
	// counting it as a failure if failed.
	End(ctx context.Context, now time.Time, ks Keys, hold Hold, failed bool)
	// Fail counts a failure against every key of ks (of an attempt that
	// was not started: a cheap check), but never past a key's budget.
	Fail(ctx context.Context, now time.Time, ks Keys)
}

// Hold is how an attempt begun by [Counter.Start] holds its budget until
// it ends.
type Hold uint8

const (
	// HeldHere: counted in flight in this process only.
	HeldHere Hold = iota
	// HeldInStore: held in the shared [Store] before it runs, beside the
	// failures, and settled there when it ends ([Store.Settle]).
	HeldInStore
)

// Limiter counts attempts against their keys and exports how often it
// refused one. Create it with [New].
type Limiter struct {
	c       Counter
	now     func() time.Time
	seed    maphash.Seed
	names   *[32]byte // with a shared counter, the secret NameKey hashes with
	refused [numKinds]prometheus.Counter
}

// Config configures a [Limiter].
type Config struct {
	// Name labels the limiter's metrics (limiter="token", "login").
	Name string
	// Rules are the budgets of each kind of key (used by the default
	// Counter).
	Rules Rules
	// MaxKeys bounds the keys the default Counter tracks (default
	// 100,000, a few MiB).
	MaxKeys int
	// Counter, when set, replaces the in-memory counter.
	Counter Counter
	// Shared, when set (and Counter is not), makes the failures shared
	// by every replica that has the same Shared: see [Shared].
	Shared *Shared
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Registerer receives the metrics; nil means none.
	Registerer prometheus.Registerer
}

// DefaultMaxKeys is the default bound on the keys tracked in memory.
const DefaultMaxKeys = 100_000

// New returns a Limiter.
func New(cfg Config) *Limiter {
	l := &Limiter{c: cfg.Counter, now: cfg.Now, seed: maphash.MakeSeed()}
	if l.now == nil {
		l.now = time.Now
	}
	var mem *Memory
	if l.c == nil {
		mem = NewMemory(cfg.Rules, cfg.MaxKeys)
		l.c = mem
		if cfg.Shared != nil {
			l.c = newSharedCounter(cfg.Name, mem, cfg.Shared, l.now, cfg.Registerer)
			l.names = nameKey(cfg.Shared.Secret)
		}
	}
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "oauthd_throttle_refused_total",
		Help:        "Attempts refused with 429 because a failure limit was reached, by the kind of key that was exhausted (addr, client, account, login).",
		ConstLabels: prometheus.Labels{"limiter": cfg.Name},
	}, []string{"key"})
	if cfg.Registerer != nil {
		// A second limiter of the same name on one registry (tests) shares
		// the first one's counter and exports only the first one's keys.
		var are prometheus.AlreadyRegisteredError
		if err := cfg.Registerer.Register(refused); errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				refused = existing
			}
		}
		if mem != nil {
			_ = cfg.Registerer.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "oauthd_throttle_keys",
				Help:        "Keys (identifier and address pairs, and addresses) with failures not yet forgotten.",
				ConstLabels: prometheus.Labels{"limiter": cfg.Name},
			}, func() float64 { return float64(mem.Len()) }))
		}
	}
	for k := range numKinds {
		l.refused[k] = refused.WithLabelValues(k.String())
	}
	return l
}

// AddrKey is the key of the address alone.
func AddrKey(addr netip.Addr) Key { return Key{Kind: Addr, Addr: addrBytes(addr)} }

// UserKey is the key of user ID id at addr.
func UserKey(id int64, addr netip.Addr) Key {
	return Key{Kind: Account, ID: uint64(id), Addr: addrBytes(addr)}
}

// NameKey is the key of the identifier name (a client ID, or a login name
// that names no user; kind Client or Login) at addr. The name is hashed
// with a seed of this process, so the key holds no copy of it and nobody
// can choose names whose keys collide. A limiter whose failures are
// shared hashes with a secret every replica has ([Shared.Secret]), so
// that the replicas agree on the key and the database never holds a
// typed login name (perhaps a password typed in the wrong field) in a
// form anyone could test guesses against.
func (l *Limiter) NameKey(kind Kind, name string, addr netip.Addr) Key {
	if l.names != nil {
		return Key{Kind: kind, ID: keyedHash(l.names, name), Addr: addrBytes(addr)}
	}
	return Key{Kind: kind, ID: maphash.String(l.seed, name), Addr: addrBytes(addr)}
}

// addrBytes is the address as counted: an IPv4 address (also when
// IPv4-mapped), or the /64 of an IPv6 address, which one subscriber
// usually holds whole. The zero Addr (an unparsable peer) is all zeros.
func addrBytes(a netip.Addr) [16]byte {
	a = a.Unmap()
	b := a.As16()
	if a.Is6() {
		clear(b[8:])
	}
	return b
}

// ParseAddr parses the source address as Echo's RealIP gives it; anything
// unparsable is the zero Addr (one shared key).
func ParseAddr(s string) netip.Addr {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return a.WithZone("")
}

// Errors of [Limiter.Reserve].
var (
	// ErrLimited: a key has used up its failures; retry after the wait.
	ErrLimited = errors.New("throttle: too many failed attempts")
	// ErrBusy: the attempts in flight under a key take its remaining
	// budget, and none ended within the wait allowed.
	ErrBusy = errors.New("throttle: attempts in flight hold the remaining budget")
)

// Reservation is an attempt begun by [Limiter.Reserve].
type Reservation struct {
	l    *Limiter
	ks   Keys
	hold Hold
	ctx  context.Context // Reserve's: the attempt ends under it
}

// reservePoll is how long Reserve first waits before it looks again
// while the budget is held by attempts in flight; each wait doubles, up
// to maxReservePoll (a shared counter asks its store each time).
const (
	reservePoll    = 5 * time.Millisecond
	maxReservePoll = 80 * time.Millisecond
)

// Reserve begins an attempt under ks before an expensive check (a
// password): it is counted against every key while it runs, so
// concurrent attempts cannot run more checks than the budget. A key whose
// failures alone have used up its budget is refused at once with
// [ErrLimited] and the wait until an attempt is allowed (at least one
// second). When only the attempts in flight take a key's remaining budget,
// Reserve waits, up to maxWait or until ctx is done, for them to end (a
// success gives its place back): then [ErrBusy]. Right credentials
// therefore never refuse each other, however many arrive at once.
//
// End the attempt with [Reservation.Fail] or [Reservation.Refund]; defer
// Refund right away so that a panic cannot leave it in flight.
func (l *Limiter) Reserve(ctx context.Context, ks Keys, maxWait time.Duration) (Reservation, time.Duration, error) {
	var deadline time.Time
	poll := reservePoll
	for {
		wait, i, busy, hold := l.c.Start(ctx, l.now(), ks)
		switch {
		case i < 0:
			return Reservation{l: l, ks: ks, hold: hold, ctx: ctx}, 0, nil
		case !busy:
			return Reservation{}, l.refuse(ks, i, wait), ErrLimited
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(maxWait)
		}
		if !time.Now().Before(deadline) {
			return Reservation{}, 0, ErrBusy
		}
		t := time.NewTimer(min(poll, time.Until(deadline)))
		poll = min(2*poll, maxReservePoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return Reservation{}, 0, ctx.Err()
		case <-t.C:
		}
	}
}

// Fail ends the attempt as a failure: it keeps its count.
func (r *Reservation) Fail() {
	if r.l == nil {
		return
	}
	r.l.c.End(r.ctx, r.l.now(), r.ks, r.hold, true)
	r.l = nil
}

// Refund ends the attempt as a success (or one that never ran): it counts
// nothing. After Fail, or on a zero Reservation, it does nothing.
func (r *Reservation) Refund() {
	if r.l == nil {
		return
	}
	r.l.c.End(r.ctx, r.l.now(), r.ks, r.hold, false)
	r.l = nil
}

// Check reports whether an attempt under ks may run, counting nothing,
// and if not how long until it may (at least one second). Use it with
// [Limiter.Fail] where the check is cheap and legitimate callers may send
// many at once (the token endpoint): successes then never hold budget,
// and a concurrent flood overshoots the budget by at most the requests
// already in flight.
func (l *Limiter) Check(ctx context.Context, ks Keys) (wait time.Duration, ok bool) {
	wait, i := l.c.Peek(ctx, l.now(), ks)
	if i >= 0 {
		return l.refuse(ks, i, wait), false
	}
	return 0, true
}

// Fail counts a failed attempt (one checked after [Limiter.Check])
// against every key of ks.
func (l *Limiter) Fail(ctx context.Context, ks Keys) {
	l.c.Fail(ctx, l.now(), ks)
}

// refuse counts a refusal under the kind of key i and returns the wait.
func (l *Limiter) refuse(ks Keys, i int, wait time.Duration) time.Duration {
	if k := ks.At(i).Kind; k < numKinds {
		l.refused[k].Inc()
	}
	return max(wait, time.Second)
}
