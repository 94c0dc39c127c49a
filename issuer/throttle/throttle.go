package throttle

import (
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

// Counter holds the failure counts. [Memory] keeps them in this process;
// a shared store (for replicas) would implement the same three methods.
type Counter interface {
	// Take counts one attempt against every key of ks at now, all or
	// none, and returns -1. If a key has no attempt left it counts
	// nothing, and returns the index of such a key and how long until
	// every key has an attempt again.
	Take(now time.Time, ks Keys) (wait time.Duration, exhausted int)
	// Peek answers as Take would, counting nothing.
	Peek(now time.Time, ks Keys) (wait time.Duration, exhausted int)
	// Give returns an attempt that Take counted at now.
	Give(now time.Time, ks Keys)
}

// Limiter counts attempts against their keys and exports how often it
// refused one. Create it with [New].
type Limiter struct {
	c       Counter
	now     func() time.Time
	seed    maphash.Seed
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
// can choose names whose keys collide.
func (l *Limiter) NameKey(kind Kind, name string, addr netip.Addr) Key {
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

// Reservation is an attempt counted by [Limiter.Reserve].
type Reservation struct {
	l  *Limiter
	ks Keys
}

// Reserve counts one attempt against every key of ks, all or none, before
// an expensive check (a password): concurrent attempts cannot run more
// checks than the budget. When a key has no attempt left it counts
// nothing and returns ok false and how long until the attempt would be
// allowed (at least one second). Call [Reservation.Refund] when the
// attempt succeeds (or never ran); a failed attempt keeps its count.
//
// Attempts in flight hold budget until they end, so the number that may
// be in flight at once under one key is its Burst: bound the concurrency
// before reserving (the login page reserves once admitted to the
// password check gate).
func (l *Limiter) Reserve(ks Keys) (r Reservation, wait time.Duration, ok bool) {
	wait, i := l.c.Take(l.now(), ks)
	if i >= 0 {
		return Reservation{}, l.refuse(ks, i, wait), false
	}
	return Reservation{l: l, ks: ks}, 0, true
}

// Check reports whether an attempt under ks may run, counting nothing,
// and if not how long until it may (at least one second). Use it with
// [Limiter.Fail] where the check is cheap and legitimate callers may send
// many at once (the token endpoint): successes then never hold budget,
// and a concurrent flood overshoots the budget by at most the requests
// already in flight.
func (l *Limiter) Check(ks Keys) (wait time.Duration, ok bool) {
	wait, i := l.c.Peek(l.now(), ks)
	if i >= 0 {
		return l.refuse(ks, i, wait), false
	}
	return 0, true
}

// Fail counts a failed attempt against every key of ks (none if one of
// them is already exhausted by concurrent failures).
func (l *Limiter) Fail(ks Keys) {
	l.c.Take(l.now(), ks)
}

// refuse counts a refusal under the kind of key i and returns the wait.
func (l *Limiter) refuse(ks Keys, i int, wait time.Duration) time.Duration {
	if k := ks.At(i).Kind; k < numKinds {
		l.refused[k].Inc()
	}
	return max(wait, time.Second)
}

// Refund gives the attempt back: it succeeded, or never ran. Refunding a
// zero Reservation, or twice, does nothing.
func (r *Reservation) Refund() {
	if r.l == nil {
		return
	}
	r.l.c.Give(r.l.now(), r.ks)
	r.l = nil
}
