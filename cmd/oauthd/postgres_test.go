package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"

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

// TestStoreCopy moves a live installation from bbolt to PostgreSQL and back:
// a refresh token and an access token issued before each copy work after
// it, and a copy into a database that holds records is refused.
func TestStoreCopy(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "o.db")
	// One address for the three servers in turn, so that they are one
	// issuer.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	e := &e2e{server: startServe(t, file, "--addr", addr)}
	var u struct{ ID int64 }
	oneJSON(t, mustOauthd(t, file, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--time-zone", e2eTimeZone, "--password-stdin", "--json"), &u)
	e.userID = u.ID
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
	rt, at := grantTokens(t, ctx, e, id, secret)
	e.server.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-e.server.done; err != nil {
		t.Fatal(err)
	}

	pg := pgtest.New(t)
	var rep struct {
		Users, Clients, Families, Keys int
	}
	oneJSON(t, mustOauthd(t, file, "", "store", "copy", "--from", file, "--to", pg, "--json"), &rep)
	if rep.Users != 1 || rep.Clients != 1 || rep.Families != 1 || rep.Keys < 2 {
		t.Fatalf("store copy counts = %+v; want 1 user, 1 client, 1 family and the keys", rep)
	}
	if _, stderr, err := oauthd(t, file, "", "store", "copy", "--from", file, "--to", pg); err == nil || !strings.Contains(stderr, "not empty") {
		t.Fatalf("a second copy into the same database: err %v, stderr %q; want a refusal", err, stderr)
	}

	onPG := &e2e{server: startServe(t, pg, "--addr", addr), userID: e.userID}
	onPG.wantMe(t, at) // signed before the copy, by a key copied as it was
	r := onPG.refresh(t, id, secret, rt)
	if r.Status != 200 {
		t.Fatalf("refresh on PostgreSQL with a token issued on bbolt = %d %v", r.Status, r.Body)
	}
	rt, at = r.str("refresh_token"), r.str("access_token")

	back := filepath.Join(t.TempDir(), "back.db")
	mustOauthd(t, pg, "", "store", "copy", "--from", pg, "--to", back)
	onPG.server.cmd.Process.Signal(syscall.SIGTERM)
	<-onPG.server.done
	onFile := &e2e{server: startServe(t, back, "--addr", addr), userID: e.userID}
	onFile.wantMe(t, at)
	if r := onFile.refresh(t, id, secret, rt); r.Status != 200 {
		t.Fatalf("refresh on bbolt with a token issued on PostgreSQL = %d %v", r.Status, r.Body)
	}
}

// grantTokens runs a code flow and returns the refresh and access tokens.
func grantTokens(t *testing.T, ctx context.Context, e *e2e, id, secret string) (rt, at string) {
	t.Helper()
	verifier, challenge := consenttest.PKCE()
	conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
	code := e.codeFlow(t, ctx, consenttest.New(), conf, oauth2.SetAuthURLParam("code_challenge", challenge), oauth2.SetAuthURLParam("code_challenge_method", "S256"))
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("code exchange: %v", err)
	}
	return tok.RefreshToken, tok.AccessToken
}
