package main

import (
	"os"
	"testing"

	"oauthd/data/postgres/pgtest"
)

// TestMain runs the command tests and stops the private PostgreSQL cluster
// if one of them started it. The tests that build and start the binary are
// in ./e2e (docs/DESIGN.md, "Where a test goes").
func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}
