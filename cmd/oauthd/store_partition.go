package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/backend"
	"oauthd/cmd/internal/clitext"
)

func newStorePartitionCommand(root *rootOptions) *cobra.Command {
	var asJSON bool
	var partitions int
	cmd := &cobra.Command{
		Use:   "partition-families --db postgres://… --partitions N",
		Short: "Partition the PostgreSQL families table by hash of the family ID into N partitions (0: a plain table again)",
		Long: `Partition the PostgreSQL families table by hash of the family ID into N partitions
(2–256), or make it a plain table again with --partitions 0, in one transaction under
the migration lock: the rows are copied, the indexes built again, the tables swapped.
Statements on families from running servers wait for it (none fails). Running it again
with the same N does nothing. See docs/SCALE.md and docs/POSTGRESQL.md.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("partitions") {
				return fmt.Errorf("--partitions is required: the number of hash partitions (2–256), or 0 for a plain table")
			}
			b := backend.Of(root.DB)
			if b.PartitionFamilies == nil {
				return fmt.Errorf("--db %s is a bbolt file, which has no tables to partition (it scales by one file per server); pass the postgres:// URL of the database to partition", root.DB)
			}
			logger, err := root.logger(cmd, slog.LevelWarn)
			if err != nil {
				return err
			}
			r, err := b.PartitionFamilies(cmd.Context(), root.DB, partitions, logger)
			if err != nil {
				return fmt.Errorf("partition families in %s: %w", backend.Redact(root.DB), err)
			}
			if asJSON {
				return clitext.JSON(cmd.OutOrStdout(), map[string]any{"from_partitions": r.From, "to_partitions": r.To,
					"converted": r.Converted, "families": r.Families, "took_ms": r.Took.Milliseconds()})
			}
			shape := func(n int) string {
				if n == 0 {
					return "a plain table"
				}
				return fmt.Sprintf("%d hash partitions", n)
			}
			if !r.Converted {
				return clitext.Textf(cmd.OutOrStdout(), "families is %s already; nothing to do\n", shape(r.To))
			}
			return clitext.Textf(cmd.OutOrStdout(), "families: %s → %s, %d families copied in %s\n", shape(r.From), shape(r.To), r.Families, r.Took.Round(1e6))
		},
	}
	cmd.Flags().IntVar(&partitions, "partitions", 0, "hash partitions (2–256), or 0 for a plain table")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {\"from_partitions\", \"to_partitions\", \"converted\", \"families\", \"took_ms\"}")
	return cmd
}
