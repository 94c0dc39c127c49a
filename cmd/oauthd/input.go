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
// (at most maxInput bytes).
func readInput(cmd *cobra.Command, name string) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	if name == "-" {
		b, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxInput))
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return b, nil
}
