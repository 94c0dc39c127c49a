package main

// The one backend boundary (docs/DESIGN.md "One backend boundary"): this is
// the only file of cmd that imports a backend package or knows which one
// runs. Every command opens --db with openDB and uses what the database
// offers (metrics, audit trail, shared throttle, change feed) without
// asking which backend it is. TestOneBackendBoundary keeps it so.
//
// To add a backend: give its package an Open, write its entry below
// (schemes, its opener) and run data/datatest's suite in its package.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"oauthd/data"
	"oauthd/data/bolt"
	"oauthd/data/memory"
	"oauthd/data/postgres"
	"oauthd/issuer/throttle"
)

// backend is a kind of database --db may name.
type backend struct {
	// shared: any number of processes use the database at once (a
	// database server). The CLI opens it itself and its changes reach the
	// servers by notification; bench runs on it. Otherwise one process
	// owns it (a file): serve listens on an admin socket beside it, the
	// CLI talks to that server, and bench runs on a temporary one.
	shared bool
	// redact is a --db for messages and logs: no password.
	redact func(db string) string
	open   func(ctx context.Context, db string, mode openMode, logger *slog.Logger, o openOptions) (*database, error)
	// checkSession checks serve's --db-session-url against --db before
	// anything is opened; nil: the backend has no session URL (one must
	// not be given).
	checkSession func(db, session string) error
	// inspect reads, writing nothing, what serve checks before open may
	// create or upgrade the database (the schema, the signing keys).
	inspect func(ctx context.Context, db string) (inspection, error)
	// migrate creates or upgrades the schema; nil: the backend needs none.
	migrate func(ctx context.Context, db string, logger *slog.Logger) (from, to int, err error)
	// partitionFamilies reshapes the families table (hash partitions, or 0:
	// a plain table); nil: the backend has no tables.
	partitionFamilies func(ctx context.Context, db string, partitions int, logger *slog.Logger) (partitionResult, error)
	// compact rewrites the database without its free pages (offline);
	// nil: the backend has no such command.
	compact func(ctx context.Context, db string, logger *slog.Logger) (compactReport, error)
}

// inspectDB reads db's schema and signing keys without writing anything.
func inspectDB(ctx context.Context, db string) (inspection, error) {
	return backendOf(db).inspect(ctx, db)
}

// schemaVersions is, for each backend, the schema this build reads and
// writes and the older ones it upgrades (`oauthd version`).
func schemaVersions() []schemaVersion {
	pg := postgres.SchemaVersion()
	var pgOlder []string
	for v := 1; v < pg; v++ {
		pgOlder = append(pgOlder, strconv.Itoa(v))
	}
	return []schemaVersion{
		{Backend: "bbolt", Reads: bolt.SchemaVersion, Upgrades: slices.Clone(bolt.UpgradableSchemas)},
		{Backend: "postgres", Reads: strconv.Itoa(pg), Upgrades: pgOlder},
	}
}

// schemes maps the scheme of a --db URL to its backend. Any other --db is
// a bbolt file (fileBackend).
var schemes = map[string]*backend{"postgres": &pgBackend, "postgresql": &pgBackend}

var fileBackend = &boltBackend

// backendOf is the backend --db names.
func backendOf(db string) *backend {
	if scheme, _, ok := strings.Cut(db, "://"); ok {
		if b, ok := schemes[scheme]; ok {
			return b
		}
	}
	return fileBackend
}

// openDB opens db for mode.
func openDB(ctx context.Context, db string, mode openMode, logger *slog.Logger) (*database, error) {
	return openDBWith(ctx, db, mode, logger, openOptions{})
}

// openOptions are serve's settings of the database beyond --db.
type openOptions struct {
	// sessionURL: --db-session-url, where the connections that need a
	// session (LISTEN) go when --db is a transaction pool.
	sessionURL string
}

// openDBWith is openDB with serve's options.
func openDBWith(ctx context.Context, db string, mode openMode, logger *slog.Logger, o openOptions) (*database, error) {
	return backendOf(db).open(ctx, db, mode, logger, o)
}

// checkSessionURL checks --db-session-url against --db (serve's check,
// before any side effect).
func checkSessionURL(db, session string) error {
	b := backendOf(db)
	if b.checkSession == nil {
		if session != "" {
			return fmt.Errorf("--db-session-url %s: both must be postgres:// URLs (it is for a PostgreSQL --db behind a transaction pool); --db %s needs none", postgres.Redact(session), redactDB(db))
		}
		return nil
	}
	return b.checkSession(db, session)
}

// redactDB is db for messages and logs: a URL without its password.
func redactDB(db string) string { return backendOf(db).redact(db) }

// adminSocket is the path of serve's admin socket for db, or "" when the
// backend is shared and the CLI works on the database itself.
func adminSocket(db string) string {
	if backendOf(db).shared {
		return ""
	}
	return socketBeside(db)
}

func socketBeside(file string) string { return file + ".sock" }

// scratchStore is an empty store in memory, for what needs no database
// (bench's gateway mode, built with -tags bench).
//
//lint:ignore U1000 used by the load generator's build (-tags bench)
func scratchStore() data.Store { return memory.New() }

var pgBackend = backend{
	shared:  true,
	redact:  postgres.Redact,
	migrate: postgres.Migrate,
	partitionFamilies: func(ctx context.Context, db string, partitions int, logger *slog.Logger) (partitionResult, error) {
		r, err := postgres.PartitionFamilies(ctx, db, partitions, logger)
		return partitionResult{From: r.From.Partitions, To: r.To.Partitions, Converted: r.Converted, Families: r.Families, Took: r.Took}, err
	},
	checkSession: postgres.CheckPooledURL,
	inspect: func(ctx context.Context, db string) (inspection, error) {
		in, err := postgres.Inspect(ctx, db)
		if err != nil {
			return inspection{}, fmt.Errorf("open database %s: %w", postgres.Redact(db), err)
		}
		return inspection{keys: in.Keys}, nil
	},
	open: func(ctx context.Context, db string, mode openMode, logger *slog.Logger, o openOptions) (*database, error) {
		opts := postgres.Options{Logger: logger, MaxConns: 4, Migrate: mode == forCopyTo}
		if mode == forServe {
			// Replicas that start together migrate once (advisory lock).
			// The change listener needs a session: a transaction pool in
			// the way is refused first, with what to set, rather than
			// every replica's caches going stale unnoticed (and before
			// the migration: a refused start changes nothing).
			opts = postgres.Options{Logger: logger, Migrate: true, SessionURL: o.sessionURL, CheckSession: true}
		}
		s, err := postgres.Open(ctx, db, opts)
		if err != nil {
			return nil, fmt.Errorf("open database %s: %w", postgres.Redact(db), err)
		}
		return &database{Store: s, collectors: s.Collectors(), audit: s, throttle: pgRows{s}, gc: s.ThrottleGC,
			follow: func(ctx context.Context, fn func(context.Context, change)) {
				s.Listen(ctx, postgres.ListenOptions{}, func(ctx context.Context, e postgres.Event) {
					c := change{Reset: e.Reset, Kind: e.Kind}
					if e.Kind == "throttle" {
						var ok bool
						if c.Row, c.Full, ok = postgres.ParseThrottleEvent(e.ID); !ok {
							return
						}
					}
					fn(ctx, c)
				})
			}}, nil
	},
}

// pgRows stores the shared throttle's rows in PostgreSQL.
type pgRows struct{ s *postgres.Store }

func (p pgRows) Load(ctx context.Context, rows [][]byte) ([]int64, error) {
	return p.s.ThrottleLoad(ctx, rows)
}
func (p pgRows) Fail(ctx context.Context, now time.Time, rows [][]byte, rules []throttle.Rule) ([]int64, error) {
	return p.s.ThrottleFail(ctx, now, throttleKeys(rows, rules))
}
func (p pgRows) Charge(ctx context.Context, now time.Time, rows [][]byte, rules []throttle.Rule) ([]int64, bool, error) {
	return p.s.ThrottleCharge(ctx, now, throttleKeys(rows, rules))
}
func (p pgRows) Settle(ctx context.Context, now time.Time, rows [][]byte, rules []throttle.Rule, failed bool) ([]int64, error) {
	return p.s.ThrottleSettle(ctx, now, throttleKeys(rows, rules), failed)
}

// throttleKeys pairs the rows with their rules.
func throttleKeys(rows [][]byte, rules []throttle.Rule) []postgres.ThrottleKey {
	tk := make([]postgres.ThrottleKey, len(rows))
	for i := range rows {
		tk[i] = postgres.ThrottleKey{Key: rows[i], Rule: postgres.ThrottleRule(rules[i])}
	}
	return tk
}

var boltBackend = backend{
	redact: func(db string) string { return db },
	inspect: func(_ context.Context, db string) (inspection, error) {
		in, err := bolt.Inspect(db, bolt.Options{Timeout: time.Second})
		switch {
		case errors.Is(err, bolt.ErrLocked):
			return inspection{}, boltInUse(db)
		case err != nil:
			return inspection{}, err
		}
		return inspection{keys: in.Keys}, nil
	},
	compact: func(ctx context.Context, db string, logger *slog.Logger) (compactReport, error) {
		r, err := bolt.Compact(ctx, db, bolt.Options{Logger: logger})
		switch {
		case errors.Is(err, bolt.ErrNoDatabase):
			return compactReport{}, noDatabase(db, err)
		case errors.Is(err, bolt.ErrLocked):
			return compactReport{}, fmt.Errorf("%s is in use by a running oauthd serve; stop it first", db)
		case err != nil:
			return compactReport{}, err
		}
		return compactReport{BytesBefore: r.BytesBefore, BytesAfter: r.BytesAfter, FreePagesBefore: r.FreePagesBefore}, nil
	},
	open: func(_ context.Context, db string, mode openMode, logger *slog.Logger, _ openOptions) (*database, error) {
		opts := bolt.Options{Timeout: time.Second, Logger: logger}
		switch mode {
		case forCLI:
			opts.MustExist = true
		case forCLIRead:
			opts.MustExist, opts.ReadOnly = true, true
		case forCopyFrom:
			if _, err := os.Stat(db); err != nil {
				return nil, fmt.Errorf("open %s: %w", db, err)
			}
		case forCopyTo:
			if _, err := os.Stat(db); err == nil {
				return nil, fmt.Errorf("%s exists; copy into a new file", db)
			}
		}
		s, err := bolt.Open(db, opts)
		switch {
		case errors.Is(err, bolt.ErrNoDatabase):
			return nil, noDatabase(db, err)
		case errors.Is(err, bolt.ErrLocked) && mode == forServe:
			return nil, boltInUse(db)
		case errors.Is(err, bolt.ErrLocked) && (mode == forCLI || mode == forCLIRead):
			return nil, fmt.Errorf("database %s is locked by another process but no admin socket answers at %s; is an older oauthd running?", db, socketBeside(db))
		case errors.Is(err, bolt.ErrLocked):
			return nil, fmt.Errorf("%s is in use by a running oauthd serve; stop it first", db)
		case err != nil:
			return nil, err // bolt's errors name the file already
		}
		d := &database{Store: s, collectors: s.Collectors()}
		if mode == forCopyTo {
			d.discard = func(err error) {
				if !errors.Is(err, bolt.ErrNotEmpty) {
					os.Remove(db) // half-filled, and new: we made it
					os.Remove(db + "-wal")
				}
			}
		}
		return d, nil
	},
}

// boltInUse is the refusal of a bbolt file that another process holds.
func boltInUse(db string) error {
	return fmt.Errorf("database %s is in use by another process (another oauthd serve?); stop it or pass another --db", db)
}
