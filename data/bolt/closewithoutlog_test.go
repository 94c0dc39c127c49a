package bolt

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"oauthd/data"
)

// TestCloseWithoutLog: the store's hot writes, still in the write-ahead
// log, reach the bbolt file, the log file is gone, and the file alone
// opens with every write; a second close is an error, not a removal.
func TestCloseWithoutLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "copy.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	newFamily(t, s, "f1")
	rotate(t, s, "f1", 0)
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("no write-ahead log while open: %v", err)
	}
	if err := s.CloseWithoutLog(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the write-ahead log is still there after CloseWithoutLog (stat: %v)", err)
	}
	if err := s.CloseWithoutLog(t.Context()); !errors.Is(err, ErrClosed) {
		t.Errorf("second CloseWithoutLog = %v; want ErrClosed", err)
	}
	r := reopen(t, path)
	f, err := r.GetFamily(t.Context(), "f1")
	if err != nil {
		t.Fatal(err)
	}
	if !data.Equal(f.TokenHash, data.Hash("f1/1")) {
		t.Errorf("family after CloseWithoutLog and reopen is not at its last rotation: %+v", f)
	}
}
