package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
	"oauthd/data/postgres/pgtest"
)

// The tests of docs/PRODUCTION.md: each runs the guide's commands (with
// temporary paths for /var/lib/oauthd and /etc/oauthd) against the real
// binary.

// TestSystemdUnit: docs/examples/oauthd.service passes `systemd-analyze
// verify` (with the unit's binary path pointed at the binary under test,
// since verify checks that ExecStart is executable). Locally it skips with
// one line when systemd-analyze is missing; in CI (CI=true) it fails.
func TestSystemdUnit(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze is missing: .ci/run installs Debian's systemd package for this test")
		}
		t.Skip("skipping the systemd unit check: systemd-analyze is not installed (apt-get install systemd)")
	}
	unit, err := os.ReadFile("../../../docs/examples/oauthd.service")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "ExecStart=/usr/local/bin/oauthd serve") {
		t.Fatal("docs/examples/oauthd.service no longer starts /usr/local/bin/oauthd serve; update this test and docs/PRODUCTION.md")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "oauthd.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/oauthd", oauthdBin)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(sa, "verify", path).CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify docs/examples/oauthd.service: %v\n%s", err, out)
	}
	// The check can fail: a unit whose binary is missing does.
	bad := filepath.Join(dir, "bad.service")
	if err := os.WriteFile(bad, unit, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/usr/local/bin/oauthd"); err != nil {
		if out, err := exec.Command(sa, "verify", bad).CombinedOutput(); err == nil {
			t.Fatalf("systemd-analyze verify passed a unit whose binary does not exist:\n%s", out)
		}
	}
}

// makeMasterKey runs the guide's `openssl rand -hex 32 > master.key` (in
// dir), or writes the same with Go where openssl is missing (not in CI).
func makeMasterKey(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "master.key")
	if _, err := exec.LookPath("openssl"); err == nil {
		cmd := exec.Command("sh", "-c", "umask 077 && openssl rand -hex 32 > master.key")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl rand -hex 32: %v\n%s", err, out)
		}
		return path
	} else if os.Getenv("CI") == "true" {
		t.Fatal("openssl is missing (Debian's ca-certificates brings it)")
	}
	b := make([]byte, 32)
	rand.Read(b)
	if err := os.WriteFile(path, []byte(hex.EncodeToString(b)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// publicBase is the --base-url of the production tests: the issuer stays
// the same across restarts on other ports, as a public address does.
const publicBase = "https://api.example.test"

// grantOn signs the e2e user in on s, approves a new client and returns the
// client's configuration and its first token.
func grantOn(t *testing.T, s *server, db string) (*e2e, *oauth2.Config, *oauth2.Token) {
	t.Helper()
	e := &e2e{server: s}
	mustOauthd(t, db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--password-stdin")
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
	conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInHeader, "PROFILE_READ")
	// Not e.codeFlow: the issuer here is the public base URL, not the
	// listen address.
	got, err := consenttest.New().Authorize(context.Background(), conf.AuthCodeURL("st"), e2eEmail, e2ePassword, true)
	if err != nil || got.Query().Get("code") == "" {
		t.Fatalf("authorize: %v, %v", got, err)
	}
	tok, err := conf.Exchange(context.Background(), got.Query().Get("code"))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	return e, conf, tok
}

// refreshOn refreshes rt at base; it returns the new refresh token, or ""
// with the error code when refused.
func refreshOn(t *testing.T, base string, conf *oauth2.Config, rt string) (string, string) {
	t.Helper()
	r := e2ePost(t, base+"/v2/auth/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}},
		conf.ClientID, conf.ClientSecret)
	if r.Status != 200 {
		return "", r.str("error")
	}
	return r.str("refresh_token"), ""
}

// TestProductionBackupRestore follows docs/PRODUCTION.md's backups on the
// embedded database: a master key made with openssl; a backup taken while
// the server runs (`store copy` through its admin socket) and one taken
// after it stopped (the file and its log copied); each restored by
// starting a server on it with the same master key, where the refresh
// token current at the backup works; without the key, the server refuses
// to start and says which key it needs.
func TestProductionBackupRestore(t *testing.T) {
	dir := t.TempDir()
	key := makeMasterKey(t, dir)
	lib := filepath.Join(dir, "var-lib-oauthd")
	backups := filepath.Join(dir, "var-backups-oauthd")
	for _, d := range []string{lib, backups} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(lib, "oauthd.db")
	s := startServe(t, db, "--master-key-file", key, "--base-url", publicBase)
	_, conf, tok := grantOn(t, s, db)

	// A backup while serving.
	hot := filepath.Join(backups, "oauthd-hot.db")
	out := mustOauthd(t, db, "", "--master-key-file", key, "store", "copy", "--from", db, "--to", hot)
	if !strings.Contains(out, "1 refresh families") {
		t.Fatalf("store copy while serving: %q; want the grant copied", out)
	}
	// The server goes on; its token moves past the backup.
	rt2, errCode := refreshOn(t, s.base, conf, tok.RefreshToken)
	if rt2 == "" {
		t.Fatalf("refresh on the running server after the backup: %s", errCode)
	}
	stopServe(t, s)
	// A backup after stopping: the file and its log, as they are.
	cold := filepath.Join(backups, "cold")
	if err := os.Mkdir(cold, 0o700); err != nil {
		t.Fatal(err)
	}
	cp := exec.Command("sh", "-c", `cp -p "$1"/oauthd.db "$1"/oauthd.db-wal "$2"/`, "sh", lib, cold)
	if out, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}

	// Restoring needs the master key the keys were sealed with.
	if _, errOut, err := oauthd(t, hot, "", "serve", "--addr", "127.0.0.1:0"); err == nil || !strings.Contains(errOut, "signing keys are encrypted; set OAUTHD_MASTER_KEY or --master-key-file") {
		t.Fatalf("serve on the backup without the master key: %v\n%s; want a refusal naming the key", err, errOut)
	}
	// The hot backup, put in the database's place as the guide does: the
	// token that was current when it was taken.
	restore := exec.Command("sh", "-c", `mkdir "$1"/replaced && mv "$1"/oauthd.db* "$1"/replaced/ && install -m 0600 "$2" "$1"/oauthd.db`, "sh", lib, hot)
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	r := startServe(t, db, "--master-key-file", key, "--base-url", publicBase)
	if status, body := e2eGet(t, r.base+"/v2/me", tok.AccessToken, nil); status != 200 {
		t.Fatalf("/v2/me on the restored backup with an access token from before it: %d %s", status, body)
	}
	if rt, errCode := refreshOn(t, r.base, conf, tok.RefreshToken); rt == "" {
		t.Fatalf("refresh on the restored hot backup with the token current at the backup: %s", errCode)
	}
	stopServe(t, r)
	// The cold backup: the newest token.
	r = startServe(t, filepath.Join(cold, "oauthd.db"), "--master-key-file", key, "--base-url", publicBase)
	if rt, errCode := refreshOn(t, r.base, conf, rt2); rt == "" {
		t.Fatalf("refresh on the restored cold backup with the newest token: %s", errCode)
	}
	stopServe(t, r)
}

// productionSQL returns the first ```sql block of docs/PRODUCTION.md.
func productionSQL(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../../docs/PRODUCTION.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "```sql\n")
	sql, _, ok2 := strings.Cut(after, "```")
	if !ok || !ok2 {
		t.Fatal("docs/PRODUCTION.md has no ```sql block")
	}
	return sql
}

// TestProductionPostgres follows docs/PRODUCTION.md's PostgreSQL section:
// the guide's SQL makes the role and the database (names made unique for
// the test); `store migrate` and `store copy` from the embedded database
// are the only commands run on it before serve; serve then runs as that
// role and a refresh token from the file works. A database that a server
// has started on is no longer empty, and store copy refuses it: hence the
// guide's order.
func TestProductionPostgres(t *testing.T) {
	admin := pgtest.AdminURL(t)
	var r [4]byte
	rand.Read(r[:])
	name := "oauthd_prod_" + hex.EncodeToString(r[:])
	sql := regexp.MustCompile(`\boauthd\b`).ReplaceAllString(productionSQL(t), name)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for stmt := range strings.SplitSeq(sql, ";") {
		if stmt = strings.TrimSpace(stmt); stmt == "" || strings.HasPrefix(stmt, "--") && !strings.Contains(stmt, "\n") {
			continue
		}
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("the guide's SQL: %s: %v", stmt, err)
		}
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		c.Exec(context.Background(), "DROP ROLE IF EXISTS "+name)
	})
	u, err := url.Parse(pgtest.WithDatabase(admin, name))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(name, "change-this-password")
	pg := u.String()

	// The file the server ran on until now.
	dir := t.TempDir()
	key := makeMasterKey(t, dir)
	file := filepath.Join(dir, "oauthd.db")
	s := startServe(t, file, "--master-key-file", key, "--base-url", publicBase)
	_, conf, tok := grantOn(t, s, file)
	stopServe(t, s)

	if out := mustOauthd(t, pg, "", "store", "migrate", "--json"); !strings.Contains(out, `"to_version"`) {
		t.Fatalf("store migrate as the guide's role: %q", out)
	}
	if out := mustOauthd(t, pg, "", "store", "copy", "--from", file, "--to", pg); !strings.Contains(out, "1 refresh families") {
		t.Fatalf("store copy into the guide's database: %q", out)
	}
	p := startServe(t, pg, "--master-key-file", key, "--base-url", publicBase)
	if rt, errCode := refreshOn(t, p.base, conf, tok.RefreshToken); rt == "" {
		t.Fatalf("refresh on PostgreSQL with a token from the file: %s", errCode)
	}
	stopServe(t, p)
	// Copying again, into the database a server has run on, is refused.
	if _, errOut, err := oauthd(t, pg, "", "store", "copy", "--from", file, "--to", pg); err == nil || !strings.Contains(errOut, "empty") {
		t.Fatalf("store copy into a database in use: %v %s; want a refusal", err, errOut)
	}
}

// TestRollbackOnEmbeddedDatabase is what docs/PRODUCTION.md's "Rolling
// back" rests on: the release of the upgrade fixture (an older binary),
// run on an embedded database this build has written, refuses it (the
// file is at schema 2, owners by ID), naming the schema version, and
// changes nothing: this build still reads it. Hence the guide's rollback
// by restoring the backup taken before the upgrade. It builds that release from git (about half a
// minute) and skips, with one line, where the commit is not in the clone.
func TestRollbackOnEmbeddedDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the rollback test (it builds an older release) in -short mode")
	}
	raw, err := os.ReadFile("../testdata/upgrade/fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	release := regexp.MustCompile(`"release": "([0-9a-f]+)"`).FindStringSubmatch(string(raw))
	if release == nil {
		t.Fatal("testdata/upgrade/fixture.json names no release")
	}
	if err := exec.Command("git", "-C", "../..", "cat-file", "-e", release[1]+"^{commit}").Run(); err != nil {
		t.Skipf("skipping the rollback test: release %s is not in this clone (%v)", release[1], err)
	}
	src := t.TempDir()
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", "../../..", release[1], src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", release[1], err, out)
	}
	old := filepath.Join(src, "oauthd-old")
	build := exec.Command("go", "build", "-o", old, "./cmd/oauthd")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build release %s: %v\n%s", release[1], err, out)
	}

	db := filepath.Join(t.TempDir(), "oauthd.db")
	s := startServe(t, db)
	mustOauthd(t, db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername, "--name", e2eName, "--password-stdin")
	mustOauthd(t, db, "", "users", "disable", e2eEmail)
	stopServe(t, s)

	cmd := exec.Command(old, "--db", db, "users", "list")
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `schema version "2"`) {
		t.Fatalf("release %s on the newer database: %v\n%s\nwant a refusal naming schema version 2 (docs/PRODUCTION.md, rolling back)", release[1], err, out)
	}
	mine := mustOauthd(t, db, "", "users", "list")
	if !strings.Contains(mine, "disabled") {
		t.Fatalf("this build lists:\n%s\nwant the user disabled", mine)
	}
}
