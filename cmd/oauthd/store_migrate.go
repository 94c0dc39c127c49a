package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/backend"
	"oauthd/cmd/internal/clitext"
)

func newStoreMigrateCommand(root *rootOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "migrate --db postgres://…",
		Short: "Create or upgrade the PostgreSQL schema (serve also does it at start, under the same lock)",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := backend.Of(root.DB)
			if b.Migrate == nil {
				return fmt.Errorf("--db %s is a bbolt file, which needs no migration; pass a postgres:// URL", root.DB)
			}
			logger, err := root.logger(cmd, slog.LevelWarn)
			if err != nil {
				return err
			}
			from, to, err := b.Migrate(cmd.Context(), root.DB, logger)
			if err != nil {
				return fmt.Errorf("migrate %s: %w", backend.Redact(root.DB), err)
			}
			if asJSON {
				return clitext.JSON(cmd.OutOrStdout(), map[string]int{"from_version": from, "to_version": to})
			}
			if from == to {
				clitext.Textf(cmd.OutOrStdout(), "schema is at version %d; nothing to do\n", to)
				return nil
			}
			clitext.Textf(cmd.OutOrStdout(), "schema migrated from version %d to %d\n", from, to)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {\"from_version\", \"to_version\"}")
	return cmd
}
