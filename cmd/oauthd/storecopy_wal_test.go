package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreCopyLeavesOneFile: `store copy` into a bbolt file leaves that
// file alone, no write-ahead log beside it, and the copy opens with the
// records.
func TestStoreCopyLeavesOneFile(t *testing.T) {
	c := newCLI(t)
	addUser(c)
	dst := filepath.Join(t.TempDir(), "copy.db")
	c.ok("", "store", "copy", "--from", c.db, "--to", dst)
	if _, err := os.Stat(dst + "-wal"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("store copy left %s-wal beside the copy (stat: %v)", dst, err)
	}
	entries, err := os.ReadDir(filepath.Dir(dst))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("store copy left %v; want copy.db alone", names)
	}
	if out := (&cli{t: t, db: dst}).ok("", "users", "list"); !strings.Contains(out, "dev@example.com") {
		t.Errorf("users list on the copy = %q; want the copied user", out)
	}
}
