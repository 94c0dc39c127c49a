package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"oauthd/data/postgres/pgtest"
)

// TestReadOnlyCommandsDeclared: every list and show command is in
// readOnlyCommands (and so opens the database read-only), and every entry
// there names a command.
func TestReadOnlyCommandsDeclared(t *testing.T) {
	root := NewRootCommand()
	seen := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		p := strings.TrimPrefix(c.CommandPath(), "oauthd ")
		seen[p] = true
		if (c.Name() == "list" || c.Name() == "show") && !isReadOnly(c) {
			t.Errorf("oauthd %s reads only but is not in readOnlyCommands", p)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, p := range readOnlyCommands {
		if !seen[p] {
			t.Errorf("readOnlyCommands names %q, which is no command", p)
		}
	}
}

// readOnlyRuns are the read-only commands with their arguments, in text
// and JSON.
func readOnlyRuns(clientID string) [][]string {
	var runs [][]string
	for _, args := range [][]string{{"users", "list"}, {"clients", "list"}, {"clients", "list", "--status", "pending"},
		{"clients", "show", clientID}, {"clients", "secrets", "list", clientID}, {"keys", "list"}, {"agents", "list"}} {
		runs = append(runs, args, append(slices.Clone(args), "--json"))
	}
	return runs
}

// TestReadOnlyCommandsWriteNothing (bbolt): every read-only command, in
// text and JSON, leaves the database file and its write-ahead log
// byte-identical; then, on a database without signing keys, `keys list`
// says so and creates none, and the database can still be copied.
func TestReadOnlyCommandsWriteNothing(t *testing.T) {
	c := newCLI(t)
	addUser(c)
	c.ok("", "keys", "rotate")
	var cl struct {
		ID string `json:"client_id"`
	}
	oneJSON(t, c.ok("", "clients", "create", "--owner", "dev@example.com", "--name", "App", "--redirect-uri", "https://a.example/cb", "--scope", "PROFILE_READ", "--json"), &cl)
	legacy := filepath.Join(t.TempDir(), "legacy.json")
	if err := os.WriteFile(legacy, []byte(`[{"client_id": "legacy-1", "name": "Old", "owner": "dev@example.com", "redirect_uris": ["https://a.example/cb"], "client_secret": "s3cret-s3cret"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	c.ok("", "clients", "import", legacy)
	covered := map[string]bool{}
	for _, args := range append(readOnlyRuns(cl.ID), []string{"clients", "show", "legacy-1"}, []string{"clients", "show", "legacy-1", "--json"}) {
		before := dbFiles(t, c.db)
		c.ok("", args...)
		if after := dbFiles(t, c.db); !bytes.Equal(before[0], after[0]) || !bytes.Equal(before[1], after[1]) {
			t.Errorf("oauthd %s changed the database file or its log", strings.Join(args, " "))
		}
		covered[strings.Join(args[:len(args)-1], " ")] = true
		covered[strings.Join(args[:min(len(args), 2)], " ")] = true
		covered[strings.Join(args[:min(len(args), 3)], " ")] = true
	}
	for _, p := range readOnlyCommands {
		if !covered[p] {
			t.Errorf("oauthd %s is read-only but not run here", p)
		}
	}

	// A database set up without keys: listing them creates none.
	fresh := newCLI(t)
	before := dbFiles(t, fresh.db)
	fresh.fails("no signing keys yet: start `oauthd serve` or `store copy` into it", "", "keys", "list")
	if after := dbFiles(t, fresh.db); !bytes.Equal(before[0], after[0]) {
		t.Error("keys list on a database without keys changed it")
	}
	out := fresh.ok("", "store", "copy", "--from", fresh.db, "--to", filepath.Join(t.TempDir(), "copy.db"))
	if !strings.Contains(out, "and 0 signing keys") {
		t.Errorf("store copy of a database keys list ran on = %q; want 0 signing keys copied", out)
	}
}

// dbFiles is the content of a bbolt database and its write-ahead log.
func dbFiles(t *testing.T, path string) [2][]byte {
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

// pgRecords is every row of every table of the database at url, as text,
// table by table in a fixed order.
func pgRecords(t *testing.T, url string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) FROM information_schema.tables
		WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, tbl := range tables {
		var dump *string
		if err := conn.QueryRow(ctx, `SELECT string_agg(t::text, E'\n' ORDER BY t::text) FROM `+tbl+` t`).Scan(&dump); err != nil {
			t.Fatal(err)
		}
		b.WriteString("== " + tbl + "\n")
		if dump != nil {
			b.WriteString(*dump + "\n")
		}
	}
	return b.String()
}

// TestPostgresReadOnlyCommands: on a freshly migrated PostgreSQL
// database, `keys list` creates no signing key (it says there is none),
// so `store copy` still accepts the database as empty; then, on a
// database with records, every read-only command leaves every row of
// every table as it was.
func TestPostgresReadOnlyCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts PostgreSQL")
	}
	pg := pgtest.New(t)
	c := newCLI(t) // the bbolt database copied in below
	p := &cli{t: t, db: pg}
	p.ok("", "store", "migrate")
	_, stderr, err := p.run("", "keys", "list")
	if err == nil || !strings.Contains(stderr, "no signing keys yet: start `oauthd serve` or `store copy` into it") {
		t.Fatalf("keys list on a fresh database: %v %q; want the no-keys sentence", err, stderr)
	}
	for _, args := range [][]string{{"users", "list"}, {"clients", "list"}} {
		p.ok("", args...)
	}

	// A bbolt database with records, copied into it.
	addUser(c)
	c.ok("", "keys", "rotate")
	var cl struct {
		ID string `json:"client_id"`
	}
	oneJSON(t, c.ok("", "clients", "create", "--owner", "dev@example.com", "--name", "App", "--redirect-uri", "https://a.example/cb", "--scope", "PROFILE_READ", "--json"), &cl)
	if out := p.ok("", "store", "copy", "--from", c.db, "--to", pg); !strings.Contains(out, "copied 1 users, 1 clients") {
		t.Fatalf("store copy into the database keys list ran on = %q", out)
	}

	before := pgRecords(t, pg)
	for _, args := range readOnlyRuns(cl.ID) {
		p.ok("", args...)
	}
	if after := pgRecords(t, pg); after != before {
		t.Errorf("read-only commands changed the database:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
