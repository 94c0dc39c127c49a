package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/spf13/cobra"
)

func newStoreCommand(root *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Manage the database itself: migrate the PostgreSQL schema, copy every record to another database",
	}
	cmd.AddCommand(newStoreMigrateCommand(root), newStoreCopyCommand(root))
	return cmd
}

// follow applies the changes other processes make to the database to
// this replica's caches until ctx is done: a client change drops the cached
// clients, a key-set change reloads the keys, and a reset (the feed
// connected or reconnected, or the periodic resync is due) does both.
// Grants and families are not cached, so their changes need nothing here.
func (w *wired) follow(ctx context.Context, logger *slog.Logger) {
	w.db.follow(ctx, func(ctx context.Context, c change) {
		if c.Kind == "throttle" {
			if w.throttle != nil {
				w.throttle.learn(c.Row, c.Full)
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
