package main

import (
	"path/filepath"
	"testing"
)

// TestStoreCompact: store compact rewrites the file and keeps its records;
// it refuses a database that is not a bbolt file, and a missing one.
func TestStoreCompact(t *testing.T) {
	c := newCLI(t)
	c.ok("correct horse battery staple\n", "users", "add", "--email", "a@example.com", "--username", "a", "--name", "A", "--password-stdin")
	var r struct {
		Before    int64 `json:"bytes_before"`
		After     int64 `json:"bytes_after"`
		FreePages *int  `json:"free_pages_before"`
	}
	oneJSON(t, c.ok("", "store", "compact", "--json"), &r)
	if r.Before <= 0 || r.After <= 0 || r.After > r.Before || r.FreePages == nil {
		t.Fatalf("store compact --json = %+v", r)
	}
	var users []struct {
		Email string `json:"email"`
	}
	oneJSON(t, c.ok("", "users", "list", "--json"), &users)
	if len(users) != 1 || users[0].Email != "a@example.com" {
		t.Fatalf("users after compact = %+v", users)
	}

	c.db = "postgres://127.0.0.1:1/none"
	c.fails("is not a bbolt file", "", "store", "compact")
	c.db = filepath.Join(t.TempDir(), "missing.db")
	c.fails("missing.db", "", "store", "compact")
}
