package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"oauthd/data/postgres"
)

func newStoreCommand(root *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Manage the database itself: migrate the PostgreSQL schema, copy every record to another database",
	}
	cmd.AddCommand(newStoreMigrateCommand(root), newStoreCopyCommand(root))
	return cmd
}

// redactDB is the --db value for logs: a URL without its password.
func redactDB(db string) string {
	if postgres.IsURL(db) {
		return postgres.Redact(db)
	}
	return db
}

// follow applies the database's change notifications to this replica's
// caches until ctx is done: a client change drops the cached clients, a
// key-set change reloads the keys, and a reset (the listener connected or
// reconnected, or the periodic resync is due) does both. Grants and
// families are not cached, so their changes need nothing here.
func (w *wired) follow(ctx context.Context, logger *slog.Logger, opts postgres.ListenOptions) {
	w.pg.Listen(ctx, opts, func(ctx context.Context, e postgres.Event) {
		if e.Kind == "throttle" {
			w.throttle.learn(e.ID)
			return
		}
		if e.Reset || e.Kind == "client" {
			w.store.Invalidate()
		}
		if e.Reset || e.Kind == "keys" {
			if err := w.km.Reload(ctx); err != nil && !errors.Is(err, context.Canceled) {
				logger.ErrorContext(ctx, "reload signing keys after a change", "err", err)
			}
		}
	})
}

// registerPoolMetrics exports this replica's PostgreSQL connection pool.
func registerPoolMetrics(reg prometheus.Registerer, s *postgres.Store) {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	p := s.Pool()
	reg.MustRegister(
		gauge("oauthd_db_pool_connections", "Open connections of this replica's PostgreSQL pool.", func() float64 { return float64(p.Stat().TotalConns()) }),
		gauge("oauthd_db_pool_acquired_connections", "Connections in use.", func() float64 { return float64(p.Stat().AcquiredConns()) }),
		gauge("oauthd_db_pool_max_connections", "The pool's bound.", func() float64 { return float64(p.Stat().MaxConns()) }),
		counter("oauthd_db_pool_acquires_total", "Connections acquired from the pool.", func() float64 { return float64(p.Stat().AcquireCount()) }),
		counter("oauthd_db_pool_empty_acquires_total", "Acquires that had to wait for a connection.", func() float64 { return float64(p.Stat().EmptyAcquireCount()) }),
		counter("oauthd_db_pool_acquire_wait_seconds_total", "Time spent waiting for a connection.", func() float64 { return p.Stat().AcquireDuration().Seconds() }),
		counter("oauthd_db_retries_total", "Transactions run again after a serialization failure or deadlock.", func() float64 { return float64(s.Stats().Retries) }),
		counter("oauthd_db_cas_lost_total", "Rotations and code exchanges whose conditional write lost to a concurrent one (or a stale guess) and read again.", func() float64 { return float64(s.Stats().CASLost) }),
		counter("oauthd_db_listener_reconnects_total", "Reconnections of the change listener (each followed by a full re-read).", func() float64 { return float64(s.Stats().Reconnects) }),
		counter("oauthd_db_notifications_total", "Change notifications received from other processes (and this one).", func() float64 { return float64(s.Stats().Notifications) }),
		counter("oauthd_db_resyncs_total", "Full re-reads of the cached clients and keys (connects, reconnects, periodic).", func() float64 { return float64(s.Stats().Resets) }),
	)
}
