// Package pgtest gives a test a fresh, empty PostgreSQL database.
//
// It uses the server named by OAUTHD_TEST_POSTGRES (a URL of a role that may
// create databases) when that is set. Otherwise it starts one private
// throwaway cluster per test process with the server binaries it finds in
// /usr/lib/postgresql/*/bin (initdb, pg_ctl) on a temporary directory,
// listening only on a Unix socket there; as root it runs the server as the
// postgres user, which PostgreSQL requires. [Main] stops that cluster when
// the tests end. Each call of [New] creates one database and drops it when
// the test ends.
//
// With OAUTHD_TEST_PGBOUNCER set to the URL of a PgBouncer in front of
// that server (pool_mode=transaction, a fallback database "*" so that it
// reaches every test database), [New] returns the URL of the new database
// through PgBouncer, and [Session] the URL straight to the server, for what
// needs a session (LISTEN): the tests then run as oauthd runs behind
// PgBouncer (docs/POSTGRESQL.md "Behind PgBouncer").
//
// Where neither is available the test is skipped with one line saying what
// is missing, except when CI=true: there a missing PostgreSQL fails the test,
// so that a CI run cannot pass by skipping.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable holding the URL of a PostgreSQL
// server to test against.
const EnvURL = "OAUTHD_TEST_POSTGRES"

// EnvPgBouncer names the environment variable holding the URL of a
// PgBouncer (transaction pooling) in front of the server; see [New] and
// [Session].
const EnvPgBouncer = "OAUTHD_TEST_PGBOUNCER"

var cluster struct {
	once    sync.Once
	url     string // admin URL (database "postgres")
	dir     string // private cluster's directory, "" when external
	pgctl   string
	asUser  string // run pg_ctl as this user ("" = ourselves)
	opts    string // the server's options (pg_ctl start -o)
	skipMsg string
	err     error
}

// Main runs the tests and then stops the private cluster, if one was
// started. Call it from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	Stop()
	return code
}

// Stop stops the private cluster (if any) and removes its directory.
func Stop() {
	if cluster.dir == "" {
		return
	}
	cmd := pgCommand(cluster.asUser, cluster.pgctl, "stop", "-D", filepath.Join(cluster.dir, "data"), "-m", "immediate", "-w")
	cmd.Run()
	os.RemoveAll(cluster.dir)
	cluster.dir = ""
}

// AdminURL returns the URL of the server's maintenance database, starting
// the private cluster if needed, or skips t (always under -short).
func AdminURL(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		// One database per test: the PostgreSQL suites are most of a
		// -short run's time; bolt and memory run the same conformance
		// suite under -short.
		t.Skip("-short: the PostgreSQL tests run without -short")
	}
	cluster.once.Do(setup)
	if cluster.skipMsg != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is required in CI: %s", cluster.skipMsg)
		}
		t.Skip("PostgreSQL tests skipped: " + cluster.skipMsg)
	}
	if cluster.err != nil {
		t.Fatalf("start a private PostgreSQL cluster: %v", cluster.err)
	}
	return cluster.url
}

var dbSeq struct {
	sync.Mutex
	n int
}

// New creates an empty database for t and returns its URL; the database is
// dropped when t ends.
func New(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	dbSeq.Lock()
	dbSeq.n++
	n := dbSeq.n
	dbSeq.Unlock()
	var r [4]byte
	rand.Read(r[:])
	name := fmt.Sprintf("oauthd_test_%d_%d_%s", os.Getpid(), n, hex.EncodeToString(r[:]))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to %s: %v", redact(admin), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE template0"); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Logf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	if pb := os.Getenv(EnvPgBouncer); pb != "" {
		return WithDatabase(pb, name)
	}
	return WithDatabase(admin, name)
}

// PgBouncer reports whether the tests run through PgBouncer
// (OAUTHD_TEST_PGBOUNCER is set).
func PgBouncer() bool { return os.Getenv(EnvPgBouncer) != "" }

// Session returns, for a URL from [New], the URL of the same database
// straight to the server when the tests run through PgBouncer
// (OAUTHD_TEST_PGBOUNCER), and "" otherwise (the URL keeps its session).
// AdminURL must have been called (New does).
func Session(dbURL string) string {
	if !PgBouncer() {
		return ""
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		return ""
	}
	cluster.once.Do(setup)
	return WithDatabase(cluster.url, u.Path[1:])
}

// WithDatabase returns raw with its database replaced by name.
func WithDatabase(raw, name string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Path = "/" + name
	return u.String()
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the PostgreSQL URL"
	}
	return u.Redacted()
}

func setup() {
	if u := os.Getenv(EnvURL); u != "" {
		cluster.url = u
		return
	}
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		if p, err := exec.LookPath("initdb"); err == nil {
			bins = []string{p}
		}
	}
	if len(bins) == 0 {
		cluster.skipMsg = "set " + EnvURL + "=postgres://… or install the PostgreSQL server binaries (no initdb in /usr/lib/postgresql/*/bin or on PATH)"
		return
	}
	slices.Sort(bins)
	initdb := bins[len(bins)-1] // the newest major version
	bin := filepath.Dir(initdb)
	cluster.pgctl = filepath.Join(bin, "pg_ctl")
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			cluster.skipMsg = "running as root and there is no postgres user to run the server as (PostgreSQL refuses root); set " + EnvURL
			return
		}
		cluster.asUser = "postgres"
	}
	dir, err := os.MkdirTemp("", "oauthd-pg-")
	if err != nil {
		cluster.err = err
		return
	}
	if cluster.asUser != "" {
		u, _ := user.Lookup(cluster.asUser)
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			cluster.err = err
			return
		}
	}
	cluster.dir = dir
	pgdata := filepath.Join(dir, "data")
	out, err := pgCommand(cluster.asUser, initdb, "-D", pgdata, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions").CombinedOutput()
	if err != nil {
		cluster.err = fmt.Errorf("%s: %v\n%s", initdb, err, out)
		return
	}
	// Only a Unix socket in the private directory: no port to collide
	// with. Durability does not matter for a throwaway cluster.
	cluster.opts = fmt.Sprintf("-c listen_addresses='' -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300", dir)
	out, err = pgCommand(cluster.asUser, cluster.pgctl, "start", "-D", pgdata, "-w", "-t", "60", "-l", filepath.Join(dir, "log"), "-o", cluster.opts).CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		cluster.err = fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
		return
	}
	// A test process killed before Main's Stop (a timeout, kill -9) must
	// not leave the server running: a watchdog stops it and removes the
	// directory once this process is gone.
	watch := exec.Command("sh", "-c", `p=$1; shift; while kill -0 "$p" 2>/dev/null; do sleep 1; done; "$@" >/dev/null 2>&1; rm -rf "$0"`,
		dir, strconv.Itoa(os.Getpid()))
	watch.Args = append(watch.Args, pgCommand(cluster.asUser, cluster.pgctl, "stop", "-D", pgdata, "-m", "immediate").Args...)
	watch.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := watch.Start(); err == nil {
		go watch.Wait()
	}
	cluster.url = (&url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/postgres", RawQuery: url.Values{"host": {dir}}.Encode()}).String()
}

// CanRestart skips t, with one line, unless [Restart] can stop and start
// the server: the private cluster, not the one OAUTHD_TEST_POSTGRES names
// (other test processes share that one). A test that restarts the server
// calls it first, before it starts anything. .ci/run runs those tests in a
// pass of their own without OAUTHD_TEST_POSTGRES, so they run in CI.
func CanRestart(t testing.TB) {
	t.Helper()
	AdminURL(t)
	if cluster.dir == "" {
		t.Skip("restarting PostgreSQL needs the private cluster (unset " + EnvURL + "); .ci/run runs this test in a pass of its own")
	}
}

// Restart stops the private cluster (pg_ctl stop -m fast: sessions are
// terminated with admin_shutdown, as in a real restart), leaves it down
// for down, and starts it again; the databases survive. It skips t on an
// external server (OAUTHD_TEST_POSTGRES), which a test must not restart.
// Every test of the process sharing the cluster sees the outage.
func Restart(t testing.TB, down time.Duration) {
	t.Helper()
	AdminURL(t)
	if cluster.dir == "" {
		t.Skip("restarting PostgreSQL needs the private cluster, not " + EnvURL)
	}
	pgdata := filepath.Join(cluster.dir, "data")
	if out, err := pgCommand(cluster.asUser, cluster.pgctl, "stop", "-D", pgdata, "-m", "fast", "-w", "-t", "60").CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl stop: %v\n%s", err, out)
	}
	time.Sleep(down)
	if out, err := pgCommand(cluster.asUser, cluster.pgctl, "start", "-D", pgdata, "-w", "-t", "60", "-l", filepath.Join(cluster.dir, "log"), "-o", cluster.opts).CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl start: %v\n%s", err, out)
	}
}

func pgCommand(asUser, name string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if asUser == "" {
		cmd = exec.Command(name, args...)
	} else {
		cmd = exec.Command("runuser", append([]string{"-u", asUser, "--", name}, args...)...)
	}
	cmd.Dir = os.TempDir()
	return cmd
}
