package main

import (
	"os"
	"testing"

	"oauthd/data/postgres/pgtest"
)

// TestMain runs the load generator's tests and stops the private
// PostgreSQL cluster if one of them started it.
func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}
