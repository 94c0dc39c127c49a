package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"oauthd/data"
	"oauthd/data/bolt"
	"oauthd/data/password"
	"oauthd/issuer"
)

// shutdown stops accepting and finishes requests in flight, with a fresh
// 10 s deadline (ctx is usually cancelled already).
func shutdown(ctx context.Context, logger *slog.Logger, srvs ...*http.Server) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, s := range srvs {
		if err := s.Shutdown(sctx); err != nil {
			logger.Error("shutdown", "err", err)
		}
	}
}

// tuneGC sets the GC target to [issuer.GCPercent] unless the operator set
// GOGC (or GOMEMLIMIT, which then governs).
func tuneGC() {
	_, gogc := envValue("GOGC")
	if _, memLimit := envValue("GOMEMLIMIT"); !gogc && !memLimit {
		debug.SetGCPercent(issuer.GCPercent)
	}
}

// limitMemory sets the runtime's soft memory limit (README, "Limits") for
// slots password check slots ([password.MemoryLimit] over
// [issuer.MemoryBase]), unless the operator set GOMEMLIMIT.
func limitMemory(slots int) {
	if _, set := envValue("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(password.MemoryLimit(issuer.MemoryBase, slots))
	}
}

// listenDebug serves net/http/pprof on addr, which must be a loopback
// address: profiles show the code's hot paths and must not be public.
func listenDebug(addr string) (*http.Server, string, error) {
	if err := checkDebugAddr(addr); err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("--debug-addr: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return srv, "http://" + ln.Addr().String() + "/debug/pprof/", nil
}

// gcLoop removes expired codes, refresh-token families and sessions every
// minute until ctx is done, and on PostgreSQL (throttleGC not nil) the
// shared failure counters that lapsed.
func gcLoop(ctx context.Context, logger *slog.Logger, store data.Store, throttleGC func(context.Context, time.Time) (int, error)) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if throttleGC != nil {
			if _, err := throttleGC(ctx, time.Now()); err != nil && ctx.Err() == nil {
				logger.ErrorContext(ctx, "garbage collection of the failure counters", "err", err)
			}
		}
		res, err := store.GarbageCollect(ctx, time.Now())
		if err != nil {
			if ctx.Err() == nil {
				logger.ErrorContext(ctx, "garbage collection", "err", err)
			}
			continue
		}
		if res.AuthCodes+res.Families+res.Sessions+res.Nonces > 0 {
			logger.InfoContext(ctx, "garbage collection", "auth_codes", res.AuthCodes, "families", res.Families, "sessions", res.Sessions, "nonces", res.Nonces)
		}
	}
}

// registerStoreMetrics exports the group committer's counters: the mean
// batch is ops/commits, the mean commit latency seconds/commits.
func registerStoreMetrics(reg prometheus.Registerer, db *bolt.Store) {
	counter := func(name, help string, f func(bolt.CommitStats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return f(db.CommitStats()) })
	}
	reg.MustRegister(
		counter("oauthd_store_commits_total", "Batches of writes run by the group committer.",
			func(s bolt.CommitStats) float64 { return float64(s.Commits) }),
		counter("oauthd_store_committed_writes_total", "Writes carried by those batches.",
			func(s bolt.CommitStats) float64 { return float64(s.Ops) }),
		counter("oauthd_store_commit_seconds_total", "Time from the start of those batches to their answers, fsyncs included.",
			func(s bolt.CommitStats) float64 { return s.Time.Seconds() }),
		counter("oauthd_store_wal_syncs_total", "fdatasyncs of the write-ahead log.",
			func(s bolt.CommitStats) float64 { return float64(s.Syncs) }),
		counter("oauthd_store_wal_sync_seconds_total", "Time spent in them.",
			func(s bolt.CommitStats) float64 { return s.SyncTime.Seconds() }),
		counter("oauthd_store_checkpoints_total", "Copies of the write-ahead log into the database file.",
			func(s bolt.CommitStats) float64 { return float64(s.Checkpoints) }),
		counter("oauthd_store_checkpoint_seconds_total", "Time spent in them; the group committer answers no write meanwhile.",
			func(s bolt.CommitStats) float64 { return s.CheckpointTime.Seconds() }),
	)
}
