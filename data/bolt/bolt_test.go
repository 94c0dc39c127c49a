package bolt_test

import (
	"log/slog"
	"path/filepath"
	"testing"

	"oauthd/data"
	"oauthd/data/bolt"
	"oauthd/data/datatest"
)

func openTemp(t testing.TB) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(filepath.Join(t.TempDir(), "oauthd.db"), bolt.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStore(t *testing.T) {
	datatest.RunStoreTests(t, func(t *testing.T) data.Store { return openTemp(t) })
}
