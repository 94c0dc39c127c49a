package password

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ErrBusy is returned by [Gate.Enter] when every slot is taken and the
// queue is full, or the wait took longer than the gate allows. Answer 503
// with Retry-After.
var ErrBusy = errors.New("password checks are all busy")

// Gate bounds the password verifications that run at once. Each argon2id
// verification of a hash made by [Hash] allocates [Memory] KiB (19 MiB)
// and keeps a core busy for tens of milliseconds; without a bound, a burst
// of logins would allocate 19 MiB per request in flight. A Gate lets
// Slots of them run, lets Queue more wait for at most MaxWait, and turns
// the rest away at once with [ErrBusy]. Every verification, the dummy one
// for unknown logins included, must run between [Gate.Enter] and
// [Gate.Leave].
//
// The memory of password checks is then at most Slots × 19 MiB at any
// moment, whatever the load, for hashes made by [Hash]; an imported hash
// may take up to [MaxMemoryKiB] (64 MiB, scrypt or argon2id), so the
// worst case is Slots × 64 MiB.
type Gate struct {
	slots   chan struct{} // a token per running check
	admit   chan struct{} // a token per running or waiting check
	maxWait time.Duration

	running, waiting prometheus.Gauge
	busy             prometheus.Counter
}

// GateConfig configures a [Gate]. Zero values take the defaults shown.
type GateConfig struct {
	// Slots is how many checks run at once; default the usable cores
	// (min of runtime.NumCPU and GOMAXPROCS).
	Slots int
	// Queue is how many more may wait for a slot; default 4 × Slots.
	Queue int
	// MaxWait is the longest a check waits for a slot; default 1 s.
	MaxWait time.Duration
	// Registerer receives the gate's metrics; nil means none.
	Registerer prometheus.Registerer
}

// DefaultSlots is the default number of checks that run at once: the
// cores this process may use.
func DefaultSlots() int {
	return max(1, min(runtime.NumCPU(), runtime.GOMAXPROCS(0)))
}

// NewGate returns a Gate.
func NewGate(cfg GateConfig) *Gate {
	if cfg.Slots <= 0 {
		cfg.Slots = DefaultSlots()
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 4 * cfg.Slots
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = time.Second
	}
	g := &Gate{
		slots:   make(chan struct{}, cfg.Slots),
		admit:   make(chan struct{}, cfg.Slots+cfg.Queue),
		maxWait: cfg.MaxWait,
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "oauthd_password_checks_running",
			Help: "Password verifications (argon2id, 19 MiB each) running now; at most oauthd_password_check_slots.",
		}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "oauthd_password_checks_waiting",
			Help: "Logins waiting for a password verification slot.",
		}),
		busy: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oauthd_password_checks_busy_total",
			Help: "Logins answered 503 because every password verification slot was taken and the queue full (or the wait too long).",
		}),
	}
	if reg := cfg.Registerer; reg != nil {
		slots := prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "oauthd_password_check_slots",
			Help: "Password verifications allowed to run at once.",
		})
		slots.Set(float64(cfg.Slots))
		for _, c := range []prometheus.Collector{g.running, g.waiting, g.busy, slots} {
			_ = reg.Register(c) // a second gate on one registry (tests) is not exported
		}
	}
	return g
}

// Slots returns how many checks run at once.
func (g *Gate) Slots() int { return cap(g.slots) }

// Enter waits for a slot: at once when one is free, for at most MaxWait
// (or until ctx is done) when the queue has room, and not at all
// otherwise. It returns [ErrBusy] (or ctx's error) without a slot; after a
// nil error the caller must call [Gate.Leave].
func (g *Gate) Enter(ctx context.Context) error {
	select {
	case g.admit <- struct{}{}:
	default:
		g.busy.Inc()
		return ErrBusy
	}
	select {
	case g.slots <- struct{}{}:
		g.running.Inc()
		return nil
	default:
	}
	g.waiting.Inc()
	t := time.NewTimer(g.maxWait)
	defer t.Stop()
	var err error
	select {
	case g.slots <- struct{}{}:
		g.running.Inc()
	case <-t.C:
		g.busy.Inc()
		err = ErrBusy
	case <-ctx.Done():
		err = ctx.Err()
	}
	g.waiting.Dec()
	if err != nil {
		<-g.admit
	}
	return err
}

// Leave frees the slot taken by [Gate.Enter].
func (g *Gate) Leave() {
	g.running.Dec()
	<-g.slots
	<-g.admit
}
