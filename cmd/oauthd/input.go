package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// maxInput bounds what an import reads from stdin.
const maxInput = 64 << 20

// readInput reads the file an import command names, or stdin for "-"
// (at most maxInput bytes: a longer stdin is refused, never cut, since a
// cut between two lines would drop rows without a word).
func readInput(cmd *cobra.Command, name string) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	if name == "-" {
		b, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxInput+1))
		if err == nil && len(b) > maxInput {
			return nil, fmt.Errorf("read %s: stdin is larger than 64 MiB; pass the file by name instead; nothing was imported", name)
		}
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return b, nil
}
