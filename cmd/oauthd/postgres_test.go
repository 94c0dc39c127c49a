package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"oauthd/data/postgres"
	"oauthd/data/postgres/pgtest"
)

// pgExec runs one statement on the database at url.
func pgExec(t *testing.T, url, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestPostgresCLI: on a PostgreSQL --db the CLI works on the database
// directly while serve runs (no admin socket), store migrate is explicit
// and idempotent, and commands refuse a schema they do not know.
func TestPostgresCLI(t *testing.T) {
	db := pgtest.New(t)

	// A command other than serve and store does not create the schema.
	_, stderr, err := oauthd(t, db, "", "clients", "list")
	if err == nil || !strings.Contains(stderr, "oauthd store migrate") {
		t.Fatalf("clients list on an empty database: err %v, stderr %q; want a refusal naming `oauthd store migrate`", err, stderr)
	}
	if out := mustOauthd(t, db, "", "store", "migrate"); !strings.Contains(out, "migrated from version 0") {
		t.Fatalf("store migrate = %q", out)
	}
	if out := mustOauthd(t, db, "", "store", "migrate"); !strings.Contains(out, "nothing to do") {
		t.Fatalf("second store migrate = %q", out)
	}

	e := &e2e{server: startServe(t, db)}
	if _, err := os.Stat(db + ".sock"); err == nil {
		t.Fatal("serve on PostgreSQL made an admin socket")
	}
	var u struct{ ID int64 }
	oneJSON(t, mustOauthd(t, db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--time-zone", e2eTimeZone, "--password-stdin", "--json"), &u)
	e.userID = u.ID
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
	if r := e2ePost(t, e.introspectURL(), map[string][]string{"token": {"x"}}, id, secret); r.Status != 200 {
		t.Fatalf("introspect with the new client's credentials = %d %v; want 200 (the CLI's client reached the server)", r.Status, r.Body)
	}
	if out := e.cli(t, "clients", "list"); !strings.Contains(out, id) {
		t.Fatalf("clients list = %q; want %s", out, id)
	}

	// A schema newer than this build: every command refuses it.
	pgExec(t, db, "INSERT INTO oauthd_schema (version, name) VALUES ($1, 'future')", postgres.SchemaVersion()+1)
	for _, args := range [][]string{{"clients", "list"}, {"store", "migrate"}} {
		_, stderr, err := oauthd(t, db, "", args...)
		if err == nil || !strings.Contains(stderr, "newer") {
			t.Fatalf("oauthd %v on a newer schema: err %v, stderr %q; want a refusal", args, err, stderr)
		}
	}
}

// pgQueryRow scans one row of a query on the database at url.
func pgQueryRow(t *testing.T, url, sql string, args []any, dest ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, sql, args...).Scan(dest...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
