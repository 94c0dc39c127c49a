package issuer

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"oauthd/data"
)

// A store outage (data.ErrUnavailable: PostgreSQL down or restarting, a
// closed or failed bbolt store) is answered 503 with Retry-After by every
// endpoint that needs the store, never 500: JSON endpoints with
// temporarily_unavailable ([ErrTemporarilyUnavailable]), the pages with
// the error page, the authorization endpoint after the redirect URI is
// trusted with a temporarily_unavailable redirect (RFC 6749 §4.1.2.1).
// [Outage] logs it once when it starts and once when it ends, never per
// request, and counts the refused requests.

// RetryAfterUnavailable is the Retry-After of a 503 during a store outage,
// in seconds.
const RetryAfterUnavailable = 2

// errUnavailable is the JSON answer during a store outage.
var errUnavailable = &Error{Code: ErrTemporarilyUnavailable.Code, Status: http.StatusServiceUnavailable,
	Description: "the database is unavailable; retry shortly", retryAfter: RetryAfterUnavailable}

// OutageConfig configures an [Outage].
type OutageConfig struct {
	// Logger gets the two lines of an outage. Default: discard.
	Logger *slog.Logger
	// Probe tells whether the store answers again (e.g. keys.Manager.Ready);
	// [Outage.Run] calls it while the store is down. Without it the end is
	// never logged.
	Probe func(ctx context.Context) error
	// Interval between probes. Default 1 s.
	Interval time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Registerer gets oauthd_store_unavailable and
	// oauthd_store_unavailable_responses_total. Default: none.
	Registerer prometheus.Registerer
}

// Outage tracks whether the store is reachable, from the requests that
// found it unavailable. Safe for concurrent use; a nil *Outage does
// nothing (requests are still answered 503).
type Outage struct {
	cfg     OutageConfig
	mu      sync.Mutex
	down    bool
	since   time.Time
	refused int64
	wake    chan struct{}
	gauge   prometheus.Gauge
	count   prometheus.Counter
}

// NewOutage returns an Outage that is up.
func NewOutage(cfg OutageConfig) *Outage {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	o := &Outage{cfg: cfg, wake: make(chan struct{}, 1),
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "oauthd_store_unavailable",
			Help: "1 while requests find the database unavailable (answered 503), else 0."}),
		count: prometheus.NewCounter(prometheus.CounterOpts{Name: "oauthd_store_unavailable_responses_total",
			Help: "Requests answered 503 because the database was unavailable."}),
	}
	if cfg.Registerer != nil {
		o.gauge = registerCollector(cfg.Registerer, o.gauge)
		o.count = registerCollector(cfg.Registerer, o.count)
	}
	return o
}

// Refused records a request answered 503 for err (which wraps
// data.ErrUnavailable). The first of an outage is logged (at error
// level, with err); the others are counted.
func (o *Outage) Refused(ctx context.Context, err error) {
	if o == nil {
		return
	}
	o.count.Inc()
	o.noticed(ctx, err, 1)
}

// Noticed records a failure for err (which wraps data.ErrUnavailable) of
// work that answers no request by itself (a secret's last use, a legacy
// client's usage count): logged like the start of an outage, not counted
// as a refused request.
func (o *Outage) Noticed(ctx context.Context, err error) {
	if o == nil {
		return
	}
	o.noticed(ctx, err, 0)
}

func (o *Outage) noticed(ctx context.Context, err error, refused int64) {
	o.mu.Lock()
	o.refused += refused
	if o.down {
		o.mu.Unlock()
		return
	}
	o.down, o.since, o.refused = true, o.cfg.Now(), refused
	o.mu.Unlock()
	o.gauge.Set(1)
	o.cfg.Logger.LogAttrs(ctx, slog.LevelError, "database unavailable: answering 503 until it is back",
		slog.String("err", err.Error()))
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Down reports whether an outage is under way.
func (o *Outage) Down() bool {
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.down
}

// Run probes the store while an outage is under way and logs its end
// (how long it lasted, how many requests were refused), until ctx is
// done.
func (o *Outage) Run(ctx context.Context) {
	if o == nil || o.cfg.Probe == nil {
		return
	}
	t := time.NewTicker(o.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.wake:
		case <-t.C:
		}
		if !o.Down() {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := o.cfg.Probe(pctx)
		cancel()
		if err != nil {
			continue
		}
		o.mu.Lock()
		since, refused := o.since, o.refused
		o.down = false
		o.mu.Unlock()
		o.gauge.Set(0)
		o.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "database available again",
			slog.Duration("outage", o.cfg.Now().Sub(since)), slog.Int64("requests_refused", refused))
	}
}

// Unavailable reports whether err means the store cannot serve now.
func Unavailable(err error) bool { return errors.Is(err, data.ErrUnavailable) }
