package postgres_test

import (
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"oauthd/data/postgres"
	"oauthd/data/postgres/pgtest"
)

// TestRefusedSessionLeavesNoListen: a start refused behind a transaction
// pool (CheckSession's ErrNoSession) leaves no LISTEN behind on the pool's
// server connection. The test runs its own PgBouncer (scripts/pgbouncer.sh)
// with one server connection per database, so that a query through it
// reaches the very connection the refused LISTEN went to.
func TestRefusedSessionLeavesNoListen(t *testing.T) {
	admin := pgtest.AdminURL(t)
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg.Host, "/") {
		t.Skip("needs a PostgreSQL on a Unix socket for its own PgBouncer; " + pgtest.EnvURL + " names " + cfg.Host)
	}
	if _, err := exec.LookPath("pgbouncer"); err != nil {
		if _, err := os.Stat("/usr/sbin/pgbouncer"); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatal("pgbouncer is required in CI")
			}
			t.Skip("pgbouncer is not installed (apt-get install pgbouncer)")
		}
	}
	dir, err := os.MkdirTemp("", "oauthd-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755) // as root, PgBouncer runs as postgres
	script := filepath.Join("..", "..", "scripts", "pgbouncer.sh")
	start := exec.Command(script, "start", filepath.Join(dir, "pb"), cfg.Host, cfg.User)
	start.Env = append(os.Environ(), "PGBOUNCER_POOL_SIZE=1")
	start.Stderr = os.Stderr
	out, err := start.Output()
	t.Cleanup(func() {
		exec.Command(script, "stop", filepath.Join(dir, "pb")).Run()
		os.RemoveAll(dir)
	})
	if err != nil {
		t.Fatalf("scripts/pgbouncer.sh start: %v", err)
	}
	u, err := url.Parse(pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	pooledURL := pgtest.WithDatabase(strings.TrimSpace(string(out)), u.Path[1:])
	migrated, err := postgres.Open(ctx, pgtest.WithDatabase(admin, u.Path[1:]), postgres.Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	migrated.Close()

	pooled, err := postgres.Open(ctx, pooledURL, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pooled.Close()
	if err := pooled.CheckSession(ctx); !errors.Is(err, postgres.ErrNoSession) {
		t.Fatalf("CheckSession through a transaction pool = %v; want ErrNoSession", err)
	}
	conn, err := pgx.Connect(ctx, pooledURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT pg_listening_channels()")
	if err != nil {
		t.Fatal(err)
	}
	channels, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(channels) > 0 {
		t.Errorf("after a refused CheckSession the pool's server connection still listens on %v", channels)
	}
}
