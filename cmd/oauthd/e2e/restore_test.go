package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"oauthd/data/postgres/pgtest"
)

// TestRestoreIsNotATheft follows a restore on each backend through the
// real binary (docs/PRODUCTION.md "Backups and restores", docs/SECURITY.md
// "Refresh tokens after a restore"): a grant rotated twice, a backup while
// serving, two more rotations, the server stopped and the backup
// restored. Then the client's newest token (issued after the backup)
// refreshes once, and presented again it is reuse; on a second restore a
// token used before the backup is reuse; on a third, a token from after
// the backup presented first wins and the client's newest is then reuse.
func TestRestoreIsNotATheft(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "oauthd.db")
		backup := filepath.Join(t.TempDir(), "backup.db")
		restoreScenario(t, db,
			func() { mustOauthd(t, db, "", "store", "copy", "--from", db, "--to", backup) },
			func() {
				// As the guide does: the database and its log aside, the
				// backup in their place.
				aside := t.TempDir()
				restore := exec.Command("sh", "-c", `mv "$1"/oauthd.db* "$3"/ && install -m 0600 "$2" "$1"/oauthd.db`,
					"sh", filepath.Dir(db), backup, aside)
				if out, err := restore.CombinedOutput(); err != nil {
					t.Fatalf("restore: %v\n%s", err, out)
				}
			})
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		db := pgtest.New(t)
		direct := db
		if s := pgtest.Session(db); s != "" {
			direct = s // pg_dump and pg_restore need a session, not a transaction pool
		}
		dump := filepath.Join(t.TempDir(), "oauthd.dump")
		restoreScenario(t, db,
			func() { run(t, "pg_dump", "--format=custom", "--file", dump, "--dbname", direct) },
			func() {
				run(t, "pg_restore", "--clean", "--if-exists", "--single-transaction", "--dbname", direct, dump)
			})
	})
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s not installed", name)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "PGOPTIONS=--client-min-messages=warning")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
}

// restoreScenario runs TestRestoreIsNotATheft's steps on db with the
// backend's backup and restore.
func restoreScenario(t *testing.T, db string, backup, restore func()) {
	ctx := context.Background()
	// One address for every server in turn: one issuer.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := startServe(t, db, "--addr", addr)
	e := &e2e{server: s}
	id, secret := e.clientNoUser(t)
	rt0, _ := grantTokens(t, ctx, e, id, secret)
	refresh := func(rt string) string {
		t.Helper()
		r := e.refresh(t, id, secret, rt)
		if r.Status != 200 {
			t.Fatalf("refresh = %d %v; want 200", r.Status, r.Body)
		}
		return r.str("refresh_token")
	}
	reused := func(what, rt string) {
		t.Helper()
		r := e.refresh(t, id, secret, rt)
		if r.Status != 400 || r.str("error") != "invalid_grant" || !strings.Contains(r.str("error_description"), "already used") {
			t.Fatalf("%s: refresh = %d %v; want invalid_grant, already used", what, r.Status, r.Body)
		}
	}
	// Two rotations before the backup (so that the first token is older
	// than the one the reuse grace covers), two after.
	rt1 := refresh(rt0)
	rt2 := refresh(rt1)
	backup()
	rt3 := refresh(rt2)
	rt4 := refresh(rt3)
	restart := func() {
		t.Helper()
		stopServe(t, e.server)
		restore()
		e.server = startServe(t, db, "--addr", addr)
	}

	restart()
	rt5 := refresh(rt4) // the newest: issued after the backup
	if !metricIs(t, e.base, "oauthd_refresh_after_restore_total", "1") || !metricIs(t, e.base, "oauthd_refresh_reuse_detected_total", "0") {
		t.Fatal("want one rotation after a restore and no reuse counted")
	}
	refresh(rt5)
	reused("the newest token before the restore, presented again", rt4)

	restart()
	reused("a token used before the backup", rt0)

	restart()
	refresh(rt3) // a token from after the backup, but not the newest (say, stolen)
	reused("the client's newest token after an older one moved the family", rt4)
	stopServe(t, e.server)
}

// metricIs reports whether base's /metrics has the sample name with value.
func metricIs(t *testing.T, base, name, value string) bool {
	t.Helper()
	status, body := e2eGet(t, base+"/metrics", "", nil)
	if status != 200 {
		t.Fatalf("/metrics = %d", status)
	}
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			if v != value {
				t.Logf("%s = %s; want %s", name, v, value)
			}
			return v == value
		}
	}
	t.Logf("/metrics has no %s", name)
	return false
}
