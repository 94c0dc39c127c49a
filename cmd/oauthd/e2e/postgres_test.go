package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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

	// Four operators generate a secret at once from four processes: the
	// client had one, so exactly one gets a second.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	stderrs := make([]string, 4)
	for i := range errs {
		wg.Go(func() { _, stderrs[i], errs[i] = oauthd(t, db, "", "clients", "secrets", "generate", id) })
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		if err == nil {
			won++
		} else if !strings.Contains(stderrs[i], "2 active secrets") {
			t.Fatalf("a refused secrets generate said %q; want the 2-secret limit", stderrs[i])
		}
	}
	if won != 1 {
		t.Fatalf("%d of 4 concurrent secrets generate succeeded; want 1", won)
	}

	// The CLI's audit records are in the database, for every replica's
	// operator to read.
	var events int
	pgQueryRow(t, db, "SELECT count(*) FROM audit_events WHERE event IN ('user_added', 'client_created', 'client_approved') AND body->'actor'->>'via' = 'cli'", nil, &events)
	if events < 3 {
		var all string
		pgQueryRow(t, db, "SELECT coalesce(string_agg(event || ' ' || body::text, E'\n'), '') FROM audit_events", nil, &all)
		t.Fatalf("%d audit records of the CLI's user_added, client_created, client_approved in the database; want 3. All:\n%s", events, all)
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

// cuttable is a TCP forwarder to the test database that can be cut and
// restored on the same port: the database becoming unreachable from the
// server's point of view.
type cuttable struct {
	t      *testing.T
	target func() (net.Conn, error)
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newCuttable(t *testing.T, dbURL string) (*cuttable, string) {
	t.Helper()
	cfg, err := pgconn.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	target := func() (net.Conn, error) {
		if strings.HasPrefix(cfg.Host, "/") {
			return net.Dial("unix", fmt.Sprintf("%s/.s.PGSQL.%d", cfg.Host, cfg.Port))
		}
		return net.Dial("tcp", net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)))
	}
	c := &cuttable{t: t, target: target}
	c.listen("127.0.0.1:0")
	t.Cleanup(c.cut)
	u := url.URL{Scheme: "postgres", User: url.UserPassword(cfg.User, cfg.Password), Host: c.addr, Path: "/" + cfg.Database, RawQuery: "sslmode=disable"}
	return c, u.String()
}

func (c *cuttable) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	c.ln, c.addr = ln, ln.Addr().String()
	c.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := c.target()
			if err != nil {
				in.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, in, out)
			c.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
}

// cut closes the listener and every forwarded connection.
func (c *cuttable) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ln != nil {
		c.ln.Close()
		c.ln = nil
	}
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

func (c *cuttable) restore() { c.listen(c.addr) }

// TestReadyzDatabaseLost: /readyz says not ready while the database cannot
// be reached and ready again once it can, by itself; and the replica
// re-reads what changed meanwhile.
func TestReadyzDatabaseLost(t *testing.T) {
	db := pgtest.New(t)
	cut, viaProxy := newCuttable(t, db)
	s := startServe(t, viaProxy)
	id, secret := (&e2e{server: &server{db: db}}).clientNoUser(t)
	_ = secret
	cut.cut()
	waitStatus(t, s.base+"/readyz", http.StatusServiceUnavailable, 5*time.Second)
	// A change made while this replica cannot hear it.
	mustOauthd(t, db, "", "clients", "reject", id, "--reason", "abuse")
	cut.restore()
	waitStatus(t, s.base+"/readyz", http.StatusOK, 10*time.Second)
	// After the reconnection the replica re-read the clients: the
	// rejection holds there too.
	deadline := time.Now().Add(2 * time.Second)
	for e2ePost(t, s.base+"/v2/auth/oauth2/introspect", url.Values{"token": {"x"}}, id, secret).Status == http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("the replica still accepts a client rejected while it was cut off")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitStatus(t *testing.T, u string, want int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	last := 0
	for {
		if resp, err := http.Get(u); err == nil {
			last = resp.StatusCode
			resp.Body.Close()
			if last == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s did not answer %d within %s (last %d)", u, want, limit, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clientNoUser makes a user and an approved client on e.db through the CLI.
func (e *e2e) clientNoUser(t *testing.T) (id, secret string) {
	t.Helper()
	mustOauthd(t, e.db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--time-zone", e2eTimeZone, "--password-stdin", "--json")
	return e.client(t, e2eRedirect, []string{"PROFILE_READ"})
}

// TestServeBehindTransactionPool: through PgBouncer's transaction pooling
// (OAUTHD_TEST_PGBOUNCER, as in CI), serve without --db-session-url
// refuses to start and says what to set, instead of listening on a
// session that is not kept (every replica's caches would go stale
// silently); with it, it serves (startServe passes it, as every other test
// here run through PgBouncer does).
func TestServeBehindTransactionPool(t *testing.T) {
	db := pgtest.New(t)
	if !pgtest.PgBouncer() {
		t.Skip("needs " + pgtest.EnvPgBouncer + " (CI runs it through PgBouncer)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, oauthdBin, "serve", "--addr", "127.0.0.1:0", "--db", db)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "does not keep its session") || !strings.Contains(string(out), "--db-session-url (OAUTHD_DB_SESSION_URL)") {
		t.Fatalf("serve through PgBouncer without --db-session-url: %v\n%s\nwant a refusal naming --db-session-url", err, out)
	}
	s := startServe(t, db)
	if code := statusOf(t, s.base+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz with --db-session-url = %d; want 200", code)
	}
}

// TestStorePartitionFamilies: an operator partitions the families table of
// a database a server is running on; the refresh token issued before
// keeps working on the server that kept running, a second run does
// nothing, --partitions 0 makes it a plain table again, and a bbolt file
// is refused with what to do.
func TestStorePartitionFamilies(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	e := &e2e{server: startServe(t, db)}
	var u struct{ ID int64 }
	oneJSON(t, mustOauthd(t, db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--time-zone", e2eTimeZone, "--password-stdin", "--json"), &u)
	e.userID = u.ID
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
	rt, _ := grantTokens(t, ctx, e, id, secret)

	type report struct {
		From      int   `json:"from_partitions"`
		To        int   `json:"to_partitions"`
		Converted bool  `json:"converted"`
		Families  int64 `json:"families"`
	}
	for _, step := range []struct {
		partitions string
		want       report
	}{
		{"16", report{From: 0, To: 16, Converted: true, Families: 1}},
		{"16", report{From: 16, To: 16}},
		{"0", report{From: 16, To: 0, Converted: true, Families: 1}},
		{"8", report{From: 0, To: 8, Converted: true, Families: 1}},
	} {
		var got report
		oneJSON(t, mustOauthd(t, db, "", "store", "partition-families", "--partitions", step.partitions, "--json"), &got)
		if got != step.want {
			t.Fatalf("partition-families --partitions %s = %+v; want %+v", step.partitions, got, step.want)
		}
		r := e.refresh(t, id, secret, rt)
		if r.Status != 200 {
			t.Fatalf("refresh after partition-families --partitions %s = %d %v", step.partitions, r.Status, r.Body)
		}
		rt = r.str("refresh_token")
	}
	if out := mustOauthd(t, db, "", "store", "partition-families", "--partitions", "8"); !strings.Contains(out, "nothing to do") {
		t.Fatalf("partition-families again = %q; want nothing to do", out)
	}
	if _, stderr, err := oauthd(t, db, "", "store", "partition-families", "--partitions", "1"); err == nil || !strings.Contains(stderr, "0 (unpartitioned) or 2–256") {
		t.Fatalf("--partitions 1: err %v, stderr %q; want a refusal naming the bounds", err, stderr)
	}
	file := filepath.Join(t.TempDir(), "o.db")
	if _, stderr, err := oauthd(t, file, "", "store", "partition-families", "--partitions", "8"); err == nil || !strings.Contains(stderr, "pass the postgres:// URL") {
		t.Fatalf("partition-families on a bbolt file: err %v, stderr %q; want a refusal saying what to do", err, stderr)
	}
}
