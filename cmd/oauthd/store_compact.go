package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/backend"
	"oauthd/cmd/internal/clitext"
)

func newStoreCompactCommand(root *rootOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "compact --db PATH",
		Short: "Rewrite a bbolt file without its free pages (offline), giving back the memory and disk they hold",
		Long: `compact rewrites the bbolt file --db names without the free pages that
deleted records left (the expiry sweep, revocations): bbolt reuses them for
new records but never returns them, and keeps every one in memory as its
free list while the file is open (about 60 bytes per 4 KiB page). After a
mass deletion, compacting gives that memory and the disk back.

It needs the file for itself: stop serve first. The copy is written beside
the file (PATH.compact), made durable and renamed over it; the write-ahead
log (PATH-wal) stays and applies to the copy.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := backend.Of(root.DB)
			if b.Compact == nil {
				return fmt.Errorf("--db %s is not a bbolt file; PostgreSQL returns space by VACUUM", backend.Redact(root.DB))
			}
			logger, err := root.logger(cmd, slog.LevelWarn)
			if err != nil {
				return err
			}
			r, err := b.Compact(cmd.Context(), root.DB, logger)
			if err != nil {
				return err
			}
			if asJSON {
				return clitext.JSON(cmd.OutOrStdout(), r)
			}
			clitext.Textf(cmd.OutOrStdout(), "compacted %s: %d free pages gone, %d → %d bytes\n", root.DB, r.FreePagesBefore, r.BytesBefore, r.BytesAfter)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {\"bytes_before\", \"bytes_after\", \"free_pages_before\"}")
	return cmd
}
