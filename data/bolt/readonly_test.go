package bolt

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"oauthd/data"
)

// fileBytes is the content of the database and its write-ahead log.
func fileBytes(t *testing.T, path string) [2][]byte {
	t.Helper()
	var out [2][]byte
	for i, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// TestReadOnlyWritesNothing: a store opened with Options.ReadOnly reads
// every acknowledged write, those still in the write-ahead log after a
// crash included, refuses every write with ErrReadOnly, and leaves the
// file and its log byte-identical, open to close.
func TestReadOnlyWritesNothing(t *testing.T) {
	s := openTestStore(t)
	u, err := s.CreateUser(t.Context(), data.User{Email: "ro@example.com", Name: "RO", TimeZone: "UTC", CreatedAt: walT0})
	if err != nil {
		t.Fatal(err)
	}
	newFamily(t, s, "a")
	rotate(t, s, "a", 0)
	path := crashCopy(t, s) // the family's writes are in the log only
	before := fileBytes(t, path)

	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ro.GetUser(t.Context(), u.ID); err != nil || got.Email != "ro@example.com" {
		t.Fatalf("GetUser read-only: %+v, %v", got, err)
	}
	wantGeneration(t, ro, "a", 1)
	writes := map[string]error{
		"CreateUser (cold)": func() error {
			_, err := ro.CreateUser(t.Context(), data.User{Email: "new@example.com", Name: "N", TimeZone: "UTC", CreatedAt: walT0})
			return err
		}(),
		"DeleteFamily (hot)": ro.DeleteFamily(t.Context(), "a"),
		"Checkpoint":         ro.Checkpoint(t.Context()),
	}
	for what, err := range writes {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on a read-only store: %v; want ErrReadOnly", what, err)
		}
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	after := fileBytes(t, path)
	for i, name := range []string{"database", "write-ahead log"} {
		if !bytes.Equal(before[i], after[i]) {
			t.Errorf("the %s changed under a read-only store", name)
		}
	}
	// The same file opened for writing replays the log as before.
	wantGeneration(t, reopen(t, path), "a", 1)
}

// TestReadOnlyNeedsADatabase: a read-only open of a missing or empty file
// creates nothing and says there is no database.
func TestReadOnlyNeedsADatabase(t *testing.T) {
	path := t.TempDir() + "/none.db"
	if _, err := Open(path, Options{ReadOnly: true}); !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("read-only open of a missing file: %v; want ErrNoDatabase", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a read-only open created the file")
	}
}
