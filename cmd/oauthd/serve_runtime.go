package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime/debug"
	"time"

	"oauthd/cmd/internal/backend"
	"oauthd/data"
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

// follow applies the changes other processes make to the database to
// this replica's caches until ctx is done: a client change drops the cached
// clients, a key-set change reloads the keys, and a reset (the feed
// connected or reconnected, or the periodic resync is due) does both.
// Grants and families are not cached, so their changes need nothing here.
func (w *wired) follow(ctx context.Context, logger *slog.Logger) {
	w.db.Follow(ctx, func(ctx context.Context, c backend.Change) {
		if c.Kind == "throttle" {
			if w.throttle != nil {
				w.throttle.Learn(c.Row, c.Full)
			}
			return
		}
		if c.Reset || c.Kind == "client" {
			w.store.Invalidate()
		}
		if c.Reset || c.Kind == "keys" {
			if err := w.km.Reload(ctx); err != nil && !errors.Is(err, context.Canceled) {
				logger.ErrorContext(ctx, "reload signing keys after a change", "err", err)
			}
		}
	})
}
