package postgres

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the store's metrics: this process's connection pool, the
// retried transactions, lost conditional writes and the change listener.
func (s *Store) Collectors() []prometheus.Collector {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	p := s.Pool()
	return []prometheus.Collector{
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
	}
}
