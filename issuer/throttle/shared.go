package throttle

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Shared makes a limiter count failures in a [Store] that several
// replicas share, so that a budget holds however a load balancer spreads
// the attempts. Pass the same Store and Secret to every replica's
// limiters ([Config.Shared]).
//
// A cheap check ([Limiter.Check], a client secret) stays in this process:
// a key is looked up in the store only when this replica already knows it
// to have used at least half its budget (from its own failures and the
// announcements of the others'); a failure is counted in the store, which
// announces the key's new state to every replica ([Store.Follow]), so
// each keeps a mirror of the keys with failures. An attempt with keys
// that have no failures anywhere therefore costs no round trip.
//
// An expensive attempt ([Limiter.Reserve], a login's password check)
// under keys that this replica knows to have failures, or that already
// have an attempt in flight here, is held in the store before it runs,
// all keys or none, against the budget that the failures leave: the
// store's budget is then the one bound of such attempts on every replica
// at once, however a burst is spread. Held attempts are kept apart from
// the failures and never announced, so what every replica mirrors only
// rises until it lapses; a hold that a crashed replica never settled
// lapses as a failure would. Any other attempt is counted in flight here
// only, as [Memory] counts them: one per replica before its first
// failure or an announcement teaches it the key, so a burst runs at most
// the budget plus one attempt per replica, and a right password from a
// clean address costs no round trip.
//
// When the store fails, the counter fails open: it decides from its
// mirror and counts the failure in it, as a replica alone would; a
// database outage never refuses anyone that the replica itself would not.
type Shared struct {
	// Store keeps every replica's failures.
	Store Store
	// Secret is what [Limiter.NameKey] hashes names with: the same on
	// every replica (so that they agree on keys), never stored.
	Secret []byte
}

// Store keeps the failures that replicas share. A key's state is, as in
// [Memory], the time (Unix nanoseconds) at which its failure budget is
// whole again (the generic cell rate algorithm); a key without failures
// has state 0 or any time past.
type Store interface {
	// Load sets Full of each key to its stored state.
	Load(ctx context.Context, limiter string, keys []StoredKey) error
	// Fail counts a failure at now against each key whose budget has
	// room for it (never past a budget), sets Full of each key to its
	// state after, and announces the new states to every replica.
	Fail(ctx context.Context, limiter string, now time.Time, keys []StoredKey) error
	// Charge holds an attempt about to run against every key, all or
	// none: if each key's failures plus the attempts it already holds
	// leave room in its budget, it holds one more of each and reports
	// true; otherwise it holds nothing. Either way it sets Full of each
	// key to its failures (never the attempts held, which are not
	// announced either: the attempt may yet succeed).
	Charge(ctx context.Context, limiter string, now time.Time, keys []StoredKey) (bool, error)
	// Settle ends an attempt held by Charge: it gives the hold back and,
	// if failed, counts the failure as Fail does (and announces it). It
	// sets Full of each key to its failures after.
	Settle(ctx context.Context, limiter string, now time.Time, keys []StoredKey, failed bool) error
	// Follow registers learn, called with the announced state of every
	// key of limiter that any replica counts a failure against.
	Follow(limiter string, learn func(k Key, full int64))
}

// StoredKey is a key of one limiter as a [Store] sees it.
type StoredKey struct {
	Key  Key
	Rule Rule
	// Full is the key's state: set by Load and Fail.
	Full int64
}

// KeyLen is the length of a key's binary form.
const KeyLen = 1 + 8 + 16

// AppendBinary appends k's binary form (kind, ID, address: [KeyLen]
// bytes) to b.
func (k Key) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, byte(k.Kind))
	b = binary.BigEndian.AppendUint64(b, k.ID)
	return append(b, k.Addr[:]...), nil
}

// UnmarshalBinary sets k from its binary form.
func (k *Key) UnmarshalBinary(b []byte) error {
	if len(b) != KeyLen || Kind(b[0]) >= numKinds {
		return errors.New("throttle: not a key")
	}
	k.Kind = Kind(b[0])
	k.ID = binary.BigEndian.Uint64(b[1:9])
	copy(k.Addr[:], b[9:])
	return nil
}

// nameKey derives the key NameKey hashes with from a shared secret.
func nameKey(secret []byte) *[32]byte {
	k := sha256.Sum256(append([]byte("oauthd throttle key names\x00"), secret...))
	return &k
}

// keyedHash is the first 64 bits of SHA-256 of the key and name. Its
// output never leaves the process and its rows (so no length extension
// applies); a name's collision with another at the same address needs a
// second preimage of 64 bits.
func keyedHash(key *[32]byte, name string) uint64 {
	var buf [128]byte
	sum := sha256.Sum256(append(append(buf[:0], key[:]...), name...))
	return binary.BigEndian.Uint64(sum[:8])
}

// storeTimeout bounds one call to the store. The calls run under the
// request's values but not its cancellation: a client that hangs up right
// after a wrong guess must not keep it from being counted.
const storeTimeout = 2 * time.Second

// sharedCounter is the [Counter] of a limiter with [Config.Shared]: mem
// mirrors the failures of the keys this replica has heard of and counts
// its own attempts in flight.
type sharedCounter struct {
	name  string
	mem   *Memory
	store Store
	now   func() time.Time

	loads, loadErrs, fails, failErrs   prometheus.Counter
	charges, chargeErrs, ends, endErrs prometheus.Counter
}

func newSharedCounter(name string, mem *Memory, sh *Shared, now func() time.Time, reg prometheus.Registerer) *sharedCounter {
	ops := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "oauthd_throttle_store_ops_total",
		Help:        "Round trips of a shared failure limiter to the database: load (a key near its budget read before an attempt), fail (a failure counted), charge (a password check held before it runs), end (that hold settled: given back, with its failure if it failed), by result (ok, error: the limiter then decided from this replica's knowledge).",
		ConstLabels: prometheus.Labels{"limiter": name},
	}, []string{"op", "result"})
	if reg != nil {
		var are prometheus.AlreadyRegisteredError
		if err := reg.Register(ops); errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				ops = existing
			}
		}
	}
	s := &sharedCounter{name: name, mem: mem, store: sh.Store, now: now,
		loads: ops.WithLabelValues("load", "ok"), loadErrs: ops.WithLabelValues("load", "error"),
		fails: ops.WithLabelValues("fail", "ok"), failErrs: ops.WithLabelValues("fail", "error"),
		charges: ops.WithLabelValues("charge", "ok"), chargeErrs: ops.WithLabelValues("charge", "error"),
		ends: ops.WithLabelValues("end", "ok"), endErrs: ops.WithLabelValues("end", "error")}
	sh.Store.Follow(name, func(k Key, full int64) { mem.learn(s.now().UnixNano(), k, full) })
	return s
}

// stored returns the keys of ks that are limited, as the store sees them,
// in buf.
func (s *sharedCounter) stored(buf *[MaxKeys]StoredKey, ks Keys) []StoredKey {
	sk := buf[:0]
	for i := range ks.n {
		if r := s.mem.rules[ks.k[i].Kind]; r.Burst > 0 {
			sk = append(sk, StoredKey{Key: ks.k[i], Rule: r})
		}
	}
	return sk
}

// Peek implements [Counter]: from the mirror, after reading the store if
// a key is near its budget.
func (s *sharedCounter) Peek(ctx context.Context, now time.Time, ks Keys) (time.Duration, int) {
	wait, i := s.mem.Peek(ctx, now, ks)
	if i >= 0 || !s.mem.nearBudget(now.UnixNano(), ks) {
		return wait, i
	}
	s.load(ctx, now, ks)
	return s.mem.Peek(ctx, now, ks)
}

// Start implements [Counter]. Under keys without failures or attempts in
// flight here, the attempt is held here. Otherwise it is held in the
// store before it runs (a password check, next to which the round trip
// costs nothing), so that no burst spread over replicas runs more checks
// than the store's budget, plus one per replica. A refusal is a used-up
// budget if the failures alone leave no room, and busy otherwise (the
// attempts held may yet succeed). If the store cannot be reached, the
// replica decides alone.
func (s *sharedCounter) Start(ctx context.Context, now time.Time, ks Keys) (time.Duration, int, bool, Hold) {
	t := now.UnixNano()
	if s.mem.startClean(t, ks) {
		return 0, -1, false, HeldHere
	}
	if wait, i := s.mem.Peek(ctx, now, ks); i >= 0 {
		return wait, i, false, HeldHere // used up as far as this replica knows
	}
	var buf [MaxKeys]StoredKey
	sk := s.stored(&buf, ks)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	ok, err := s.store.Charge(sctx, s.name, now, sk)
	if err != nil {
		s.chargeErrs.Inc()
		return s.mem.Start(ctx, now, ks)
	}
	s.charges.Inc()
	s.learn(now, sk)
	if ok {
		s.mem.holdCharged(t, ks)
		return 0, -1, false, HeldInStore
	}
	if wait, i := s.mem.Peek(ctx, now, ks); i >= 0 {
		return wait, i, false, HeldHere
	}
	return 0, 0, true, HeldHere
}

// End implements [Counter]. An attempt held here that failed is counted
// in the store before it stops holding budget here. One held in the store
// is settled there: given back, and counted and announced if it failed.
func (s *sharedCounter) End(ctx context.Context, now time.Time, ks Keys, hold Hold, failed bool) {
	if hold == HeldHere {
		if failed {
			s.Fail(ctx, now, ks)
		}
		s.mem.End(ctx, now, ks, hold, false)
		return
	}
	var buf [MaxKeys]StoredKey
	sk := s.stored(&buf, ks)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	err := s.store.Settle(sctx, s.name, now, sk, failed)
	if err != nil {
		// The hold lapses by itself; a failure is counted here, as a
		// replica alone would.
		s.endErrs.Inc()
	} else {
		s.ends.Inc()
		s.learn(now, sk)
	}
	s.mem.End(ctx, now, ks, hold, failed && err != nil)
}

// Fail implements [Counter]: in the store, or, if it fails, here.
func (s *sharedCounter) Fail(ctx context.Context, now time.Time, ks Keys) {
	var buf [MaxKeys]StoredKey
	sk := s.stored(&buf, ks)
	if len(sk) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := s.store.Fail(ctx, s.name, now, sk); err != nil {
		s.failErrs.Inc()
		s.mem.Fail(ctx, now, ks)
		return
	}
	s.fails.Inc()
	s.learn(now, sk)
}

// load reads the keys' states from the store into the mirror; on an
// error the mirror stays as it is.
func (s *sharedCounter) load(ctx context.Context, now time.Time, ks Keys) {
	var buf [MaxKeys]StoredKey
	sk := s.stored(&buf, ks)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := s.store.Load(ctx, s.name, sk); err != nil {
		s.loadErrs.Inc()
		return
	}
	s.loads.Inc()
	s.learn(now, sk)
}

func (s *sharedCounter) learn(now time.Time, sk []StoredKey) {
	t := now.UnixNano()
	for _, k := range sk {
		s.mem.learn(t, k.Key, k.Full)
	}
}
