//go:build !bench

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// benchBuild is how the load generator is built: it is not part of the
// product binary (docs/PERFORMANCE.md).
const benchBuild = "go build -tags bench -o oauthd-bench ./cmd/oauthd"

// newBenchCommand is a pointer only: the load generator is its own build
// (oauthd-bench, the same commands plus `bench`), so the product binary
// carries none of it.
func newBenchCommand(*rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "bench",
		Short:  "The load generator is its own command: " + benchBuild,
		Hidden: true,
		Args:   cobra.ArbitraryArgs,
		// Flags are the load generator's: any is accepted so that the
		// pointer, not a flag error, is what the caller reads.
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("the load generator is not in the product binary: build it with `" + benchBuild +
				"` and run `oauthd-bench bench …` (scripts/bench.sh does); see docs/PERFORMANCE.md")
		},
	}
}
