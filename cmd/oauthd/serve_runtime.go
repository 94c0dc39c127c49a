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

	"oauthd/cmd/internal/wiring"
	"oauthd/data"
	"oauthd/data/password"
	"oauthd/issuer"
)

// limitMemory sets the runtime's soft memory limit (README, "Limits") for
// slots password check slots ([password.MemoryLimit] over
// [issuer.MemoryBase]), unless the operator set GOMEMLIMIT.
func limitMemory(slots int) {
	if _, set := wiring.EnvValue("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(password.MemoryLimit(issuer.MemoryBase, slots))
	}
}

// listenDebug serves net/http/pprof on addr, which must be a loopback
// address: profiles show the code's hot paths and must not be public.
func listenDebug(addr string) (*http.Server, string, error) {
	if err := wiring.CheckDebugAddr(addr); err != nil {
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
