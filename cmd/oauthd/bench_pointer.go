package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// benchRun is how the load generator is run: it is a command of its own,
// cmd/oauthd-bench, and not part of the product binary
// (docs/PERFORMANCE.md).
const benchRun = "go run ./cmd/oauthd-bench"

// newBenchCommand is a pointer only: the load generator is its own
// command (cmd/oauthd-bench), so the product binary carries none of it.
func newBenchCommand(*rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "bench",
		Short:  "The load generator is its own command: " + benchRun,
		Hidden: true,
		Args:   cobra.ArbitraryArgs,
		// Flags are the load generator's: any is accepted so that the
		// pointer, not a flag error, is what the caller reads.
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("the load generator is not in the product binary: it is its own command, run it with `" + benchRun +
				" …` from the repository (the same flags; scripts/bench.sh builds it with `go build ./cmd/oauthd-bench`); see docs/PERFORMANCE.md")
		},
	}
}
