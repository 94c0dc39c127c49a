package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestReadInputOverLimit: an import's stdin longer than maxInput is
// refused, not cut at maxInput. Cut silently, the rows past the bound were
// dropped without a word whenever the cut fell between two lines (JSON
// lines or CSV): `users import -` then said "imported N users" for part of
// the file, although an import is all or nothing. At the bound exactly,
// the input is read whole.
func TestReadInputOverLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: reads 64 MiB twice")
	}
	row := "ann@example.com,ann,Ann Lee,UTC,x\n"
	at := bytes.Repeat([]byte(row), maxInput/len(row))
	at = append(at, strings.Repeat("y", maxInput-len(at)-1)+"\n"...) // exactly maxInput, ending at a line

	cmd := &cobra.Command{}
	cmd.SetIn(bytes.NewReader(at))
	b, err := readInput(cmd, "-")
	if err != nil || len(b) != maxInput {
		t.Fatalf("stdin of exactly %d bytes: %d bytes, err %v; want all of it", maxInput, len(b), err)
	}

	over := append(at, row...)
	cmd.SetIn(bytes.NewReader(over))
	b, err = readInput(cmd, "-")
	if err == nil {
		t.Fatalf("stdin of %d bytes (over the %d-byte bound): read %d bytes and no error; want the input refused", len(over), maxInput, len(b))
	}
	if !strings.Contains(err.Error(), "64 MiB") {
		t.Errorf("error %q; want it to name the 64 MiB bound", err)
	}
}
