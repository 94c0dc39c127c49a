package postgres_test

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"oauthd/data"
	"oauthd/data/datatest"
	"oauthd/data/postgres"
	"oauthd/data/postgres/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var ctx = context.Background()

// open opens (and migrates) a store on url; it is closed when t ends.
func open(t testing.TB, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(ctx, url, postgres.Options{Migrate: true, Logger: slog.New(slog.DiscardHandler), SessionURL: pgtest.Session(url)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStore(t *testing.T) {
	datatest.RunStoreTests(t, func(t *testing.T) data.Store { return open(t, pgtest.New(t)) })
}
