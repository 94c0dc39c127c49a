package wiring

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"oauthd/cmd/internal/backend"
)

// Shutdown stops accepting and finishes requests in flight, with a fresh
// 10 s deadline (ctx is usually cancelled already).
func Shutdown(ctx context.Context, logger *slog.Logger, srvs ...*http.Server) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, s := range srvs {
		if err := s.Shutdown(sctx); err != nil {
			logger.Error("shutdown", "err", err)
		}
	}
}

// Follow applies the changes other processes make to the database to
// this replica's caches until ctx is done: a client change drops the cached
// clients, a key-set change reloads the keys, and a reset (the feed
// connected or reconnected, or the periodic resync is due) does both.
// Grants and families are not cached, so their changes need nothing here.
// w.DB.Follow must not be nil (a shared database).
func (w *Wired) Follow(ctx context.Context, logger *slog.Logger) {
	w.DB.Follow(ctx, func(ctx context.Context, c backend.Change) {
		if c.Kind == "throttle" {
			if w.Throttle != nil {
				w.Throttle.Learn(c.Row, c.Full)
			}
			return
		}
		if c.Reset || c.Kind == "client" {
			w.Store.Invalidate()
		}
		if c.Reset || c.Kind == "keys" {
			if err := w.KM.Reload(ctx); err != nil && !errors.Is(err, context.Canceled) {
				logger.ErrorContext(ctx, "reload signing keys after a change", "err", err)
			}
		}
	})
}
