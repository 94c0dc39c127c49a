package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Errors of the schema check.
var (
	// ErrSchemaTooNew: the database was migrated by a newer oauthd.
	ErrSchemaTooNew = errors.New("the database schema is newer than this oauthd knows")
	// ErrSchemaOld: the database lacks migrations this oauthd needs.
	ErrSchemaOld = errors.New("the database schema is older than this oauthd needs")
)

// migrationLock is the key of the advisory lock each migration's
// transaction takes ("oauthd" in ASCII, then 1), so that replicas that
// start together apply each migration once, one after another. It is a
// transaction-level lock (pg_advisory_xact_lock), so that migrating works
// through a transaction pooler (PgBouncer's pool_mode=transaction) too; it
// still excludes the session-level lock of earlier releases on the same
// key.
const migrationLock int64 = 0x6f_61_75_74_68_64_00_01

type migration struct {
	version int
	name    string
	sql     string
	// step, when the version has one (goSteps), runs after sql in the
	// same transaction: what SQL cannot compute (ident.Key, say).
	step func(ctx context.Context, tx pgx.Tx, logger *slog.Logger) error
}

// goSteps are the migrations' Go parts, by version.
var goSteps = map[int]func(ctx context.Context, tx pgx.Tx, logger *slog.Logger) error{
	6: upgradeIdentity,
}

// migrations returns the embedded migrations in order. A file is named
// NNNN_what.sql; versions are 1, 2, 3, … without gaps.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration file %q is not named NNNN_name.sql", e.Name())
		}
		b, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: strings.TrimSuffix(e.Name(), ".sql"), sql: string(b), step: goSteps[v]})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this build knows: the number of
// embedded migrations.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		panic(err) // the embedded files are fixed at build time; tests catch this
	}
	return len(ms)
}

const createVersionTable = `CREATE TABLE IF NOT EXISTS oauthd_schema (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`

// Migrate creates or upgrades the schema at url, one migration per
// transaction, each under the advisory lock, so that concurrent callers
// (replicas starting together) apply each migration once. It returns the
// version before and after. A database migrated by a newer oauthd gives
// [ErrSchemaTooNew] and is left as it is. It needs no session: url may be
// a transaction pool.
func Migrate(ctx context.Context, url string, logger *slog.Logger) (from, to int, err error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ms, err := migrations()
	if err != nil {
		return 0, 0, err
	}
	conn, err := migrationConn(ctx, url)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	from = -1
	for {
		var at int
		var applied *migration
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLock); err != nil {
				return fmt.Errorf("take the migration lock: %w", err)
			}
			if _, err := tx.Exec(ctx, createVersionTable); err != nil {
				return fmt.Errorf("create the schema version table: %w", err)
			}
			if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM oauthd_schema").Scan(&at); err != nil {
				return fmt.Errorf("read the schema version: %w", err)
			}
			if at >= len(ms) {
				return nil
			}
			m := ms[at]
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if m.step != nil {
				if err := m.step(ctx, tx, logger); err != nil {
					return fmt.Errorf("migration %s: %w", m.name, err)
				}
			}
			if _, err := tx.Exec(ctx, "INSERT INTO oauthd_schema (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			applied = &m
			return nil
		})
		if from < 0 {
			from = at
		}
		switch {
		case err != nil:
			return from, at, err
		case at > len(ms):
			return from, at, fmt.Errorf("%w: the database is at version %d, this oauthd knows up to %d; run a newer oauthd", ErrSchemaTooNew, at, len(ms))
		case applied == nil:
			return from, len(ms), nil
		}
		logger.InfoContext(ctx, "database schema migrated", "version", applied.version, "name", applied.name)
	}
}

// checkSchema fails unless the database is at exactly the version this
// build knows.
func checkSchema(ctx context.Context, q querier) error {
	var v int
	err := q.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM oauthd_schema").Scan(&v)
	if isUndefinedTable(err) {
		v, err = 0, nil
	}
	if err != nil {
		return fmt.Errorf("read the schema version: %w", explainConnect(err))
	}
	switch want := SchemaVersion(); {
	case v > want:
		return fmt.Errorf("%w: the database is at version %d, this oauthd knows up to %d; run a newer oauthd", ErrSchemaTooNew, v, want)
	case v == 0:
		return fmt.Errorf("%w: the database has no oauthd schema; run `oauthd store migrate --db URL` (or start `oauthd serve`, which migrates)", ErrSchemaOld)
	case v < want:
		return fmt.Errorf("%w: the database is at version %d, this oauthd needs %d; run `oauthd store migrate --db URL`", ErrSchemaOld, v, want)
	}
	return nil
}
