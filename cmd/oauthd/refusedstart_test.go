package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"oauthd/data/postgres/pgtest"
)

// refusal is one way `serve` refuses to start: its arguments (after
// serve), its environment, and what its error must say.
type refusal struct {
	name string
	args []string
	env  map[string]string
	want string
}

// serveRefusals are every refusal of serve that does not depend on the
// backend (serve.go; cmd/internal/wiring: ServeOptions.Check, Wire), made
// against the database at db, whose keys are sealed with masterKey.
func serveRefusals(t *testing.T, db, masterKey string) []refusal {
	held := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return ln.Addr().String()
	}
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badConfig, []byte("serve:\n  no-such-setting: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := map[string]string{"OAUTHD_MASTER_KEY": masterKey}
	other := strings.Repeat("ab", 32)
	return []refusal{
		{"no master key (keys sealed)", nil, nil, "signing keys are encrypted"},
		{"another master key", nil, map[string]string{"OAUTHD_MASTER_KEY": other}, "does not open the signing keys"},
		{"a malformed master key", nil, map[string]string{"OAUTHD_MASTER_KEY": "not a key"}, "not usable"},
		{"a missing --master-key-file", []string{"--master-key-file", filepath.Join(dir, "none")}, nil, "read --master-key-file"},
		{"port in use", []string{"--addr", held()}, key, "listen on"},
		{"--addr not host:port", []string{"--addr", "8080"}, key, "--addr"},
		{"--debug-addr in use", []string{"--debug-addr", held()}, key, "debug"},
		{"--debug-addr not loopback", []string{"--debug-addr", "0.0.0.0:6060"}, key, "loopback"},
		{"an unknown flag", []string{"--no-such-flag"}, key, "unknown flag"},
		{"a bad duration", []string{"--code-ttl", "1h"}, key, "--code-ttl"},
		{"a bad --refresh-reuse-grace", []string{"--refresh-reuse-grace", "1h"}, key, "--refresh-reuse-grace"},
		{"a bad --dpop-window", []string{"--dpop-window", "1ms"}, key, "--dpop-window"},
		{"metadata documents' max TTL below the min", []string{"--client-metadata-min-ttl", "1h", "--client-metadata-max-ttl", "1m"}, key, "--client-metadata-max-ttl"},
		{"a bad --base-url", []string{"--base-url", "ftp://auth.example.com"}, key, "--base-url"},
		{"a bad --trusted-proxy", []string{"--trusted-proxy", "not-an-ip"}, key, "--trusted-proxy"},
		{"a bad --password-slots", []string{"--password-slots", "-1"}, key, "--password-slots"},
		{"a bad --log-level", []string{"--log-level", "loud"}, key, "--log-level"},
		{"a bad --log-format", []string{"--log-format", "xml"}, key, "--log-format"},
		{"an unknown setting in --config", []string{"--config", badConfig}, key, "no-such-setting"},
		{"a bad setting in the environment", nil, map[string]string{"OAUTHD_MASTER_KEY": masterKey, "OAUTHD_CODE_TTL": "forever"}, "OAUTHD_CODE_TTL"},
		{"half a login handover", []string{"--login-url", "https://platform.example.com/login"}, key, "--login-jwks"},
		{"login keys unreachable", []string{"--login-url", "https://platform.example.com/login", "--login-issuer", "https://platform.example.com",
			"--login-jwks", "http://" + closed() + "/jwks.json"}, key, "--login-jwks"},
		{"--db-session-url on the wrong database", []string{"--db-session-url", "mysql://x"}, key, "--db-session-url"},
	}
}

// refuse runs serve on db with r and checks that it refuses with r.want.
func refuse(t *testing.T, db string, r refusal, extra ...string) {
	t.Helper()
	for _, k := range []string{"OAUTHD_MASTER_KEY", "OAUTHD_DB", "OAUTHD_CODE_TTL"} {
		t.Setenv(k, r.env[k])
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	args := append(append([]string{"--db", db, "serve", "--addr", "127.0.0.1:0"}, r.args...), extra...)
	err := run(ctx, args, strings.NewReader(""), &out, &errb)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("%s: serve started (err %v); want a refusal\n%s", r.name, err, errb.String())
	}
	if !strings.Contains(errb.String(), r.want) {
		t.Fatalf("%s: serve refused with %q; want it to say %q", r.name, errb.String(), r.want)
	}
}

// dirSums returns the SHA-256 of every file in dir, by name.
func dirSums(t *testing.T, dir string) map[string][sha256.Size]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string][sha256.Size]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sums[e.Name()] = sha256.Sum256(b)
	}
	return sums
}

func sameSums(a, b map[string][sha256.Size]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// fixtureMasterKey is the master key of testdata/upgrade.
func fixtureMasterKey(t *testing.T) string {
	raw, err := os.ReadFile("testdata/upgrade/fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx upgradeFixture
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	return fx.MasterKey
}

// TestRefusedStartChangesNothing: every refusal of serve leaves the
// database as it was: on the embedded database, the file and its log
// byte for byte (testdata/upgrade: a file of schema 1 with sealed keys,
// which a start upgrades, as the new binary without its master
// key did); on PostgreSQL, the database dump (schema and rows), empty,
// set up, and set up at an older schema (which a start migrates). Then
// serve starts on it with the right settings.
func TestRefusedStartChangesNothing(t *testing.T) {
	mk := fixtureMasterKey(t)
	t.Run("bbolt", func(t *testing.T) {
		dir := t.TempDir()
		db := filepath.Join(dir, "oauthd.db")
		gunzipTo(t, "testdata/upgrade/oauthd.db.gz", db)
		gunzipTo(t, "testdata/upgrade/oauthd.db-wal.gz", db+"-wal")
		before := dirSums(t, dir)
		rs := serveRefusals(t, db, mk)
		// The embedded database's own: another serve on its admin
		// socket, and the file locked by another process.
		sock, err := net.Listen("unix", db+".sock")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				c, err := sock.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		refuse(t, db, refusal{"another process on the admin socket", nil, map[string]string{"OAUTHD_MASTER_KEY": mk}, "another process answers on the admin socket"})
		sock.Close()
		os.Remove(db + ".sock")
		f, err := os.Open(db)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		refuse(t, db, refusal{"the file locked", nil, map[string]string{"OAUTHD_MASTER_KEY": mk}, "in use by another process"})
		f.Close()
		if got := dirSums(t, dir); !sameSums(before, got) {
			t.Fatalf("the admin socket or lock refusal changed the directory: %v → %v", before, got)
		}
		for _, r := range rs {
			refuse(t, db, r)
			if got := dirSums(t, dir); !sameSums(before, got) {
				t.Fatalf("%s: the refused start changed the database's directory:\n%v\n→ %v", r.name, before, got)
			}
		}
		// The right settings start it (and upgrade it).
		started(t, db, mk)
		if got := dirSums(t, dir); sameSums(before, got) {
			t.Fatal("serve with the right settings left the file as it was; the test shows nothing")
		}
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		if _, err := exec.LookPath("pg_dump"); err != nil {
			t.Skip("pg_dump not installed")
		}
		empty := pgtest.New(t)
		// A set-up database whose keys are sealed: the fixture copied in.
		fixture := filepath.Join(t.TempDir(), "oauthd.db")
		gunzipTo(t, "testdata/upgrade/oauthd.db.gz", fixture)
		gunzipTo(t, "testdata/upgrade/oauthd.db-wal.gz", fixture+"-wal")
		setUp := pgtest.New(t)
		t.Setenv("OAUTHD_MASTER_KEY", mk)
		var out, errb bytes.Buffer
		if err := run(t.Context(), []string{"--db", fixture, "store", "copy", "--from", fixture, "--to", setUp}, strings.NewReader(""), &out, &errb); err != nil {
			t.Fatalf("store copy: %v\n%s", err, errb.String())
		}
		// The set-up database at schema 6, as the release before
		// migration 0007 left it: a start upgrades it.
		older := pgtest.New(t)
		if err := run(t.Context(), []string{"--db", fixture, "store", "copy", "--from", fixture, "--to", older}, strings.NewReader(""), &out, &errb); err != nil {
			t.Fatalf("store copy: %v\n%s", err, errb.String())
		}
		pgExec(t, older, "ALTER TABLE throttle DROP COLUMN held_ns")
		pgExec(t, older, "DELETE FROM oauthd_schema WHERE version >= 7")
		for _, db := range []string{empty, setUp, older} {
			before := pgDump(t, db)
			for _, r := range serveRefusals(t, db, mk) {
				if r.name == "no master key (keys sealed)" && db == empty {
					continue // nothing sealed yet: it would start
				}
				if r.name == "another master key" && db == empty {
					continue
				}
				refuse(t, db, r)
				if got := pgDump(t, db); got != before {
					t.Fatalf("%s: the refused start changed the database:\n%s", r.name, lineDiff(before, got))
				}
			}
			if db == older {
				continue // (a later migration of this build's would be applied twice)
			}
			started(t, db, mk)
			if got := pgDump(t, db); got == before && db == empty {
				t.Fatal("serve with the right settings left the empty database as it was; the test shows nothing")
			}
		}
	})
}

// started checks that serve starts on db with the master key, then stops
// it.
func started(t *testing.T, db, mk string) {
	t.Helper()
	t.Setenv("OAUTHD_MASTER_KEY", mk)
	ctx, cancel := context.WithCancel(t.Context())
	var errb syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--db", db, "serve", "--addr", "127.0.0.1:0"}, strings.NewReader(""), &bytes.Buffer{}, &errb)
	}()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(errb.String(), "oauthd listening on") {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("serve with the right settings: %v\n%s", err, errb.String())
		case <-deadline:
			cancel()
			t.Fatalf("serve did not start:\n%s", errb.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// pgExec runs sql on the database at url.
func pgExec(t *testing.T, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// pgDump is db's schema and rows as pg_dump prints them.
func pgDump(t *testing.T, db string) string {
	t.Helper()
	if s := pgtest.Session(db); s != "" {
		db = s
	}
	out, err := exec.Command("pg_dump", "--no-owner", "--dbname", db).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	// Without pg_dump's own random \restrict key of each run.
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(l, "\\restrict ") && !strings.HasPrefix(l, "\\unrestrict ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// lineDiff lists the lines of b not in a and of a not in b.
func lineDiff(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ia, ib := in(a), in(b)
	var d []string
	for _, l := range strings.Split(b, "\n") {
		if !ia[l] {
			d = append(d, "+ "+l)
		}
	}
	for _, l := range strings.Split(a, "\n") {
		if !ib[l] {
			d = append(d, "- "+l)
		}
	}
	return strings.Join(d, "\n")
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
