package backend

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

// Backend is a kind of database --db may name.
type Backend struct {
	// Shared: any number of processes use the database at once (a
	// database server). The CLI opens it itself and its changes reach the
	// servers by notification; bench runs on it. Otherwise one process
	// owns it (a file): serve listens on an admin socket beside it, the
	// CLI talks to that server, and bench runs on a temporary one.
	Shared bool
	// redact is a --db for messages and logs: no password.
	redact func(db string) string
	open   func(ctx context.Context, db string, mode Mode, logger *slog.Logger, o Options) (*Database, error)
	// checkSession checks serve's --db-session-url against --db before
	// anything is opened; nil: the backend has no session URL (one must
	// not be given).
	checkSession func(db, session string) error
	// inspect reads, writing nothing, what serve checks before open may
	// create or upgrade the database (the schema, the signing keys).
	inspect func(ctx context.Context, db string) (Inspection, error)
	// migrate creates or upgrades the schema; nil: the backend needs none.
	Migrate func(ctx context.Context, db string, logger *slog.Logger) (from, to int, err error)
	// partitionFamilies reshapes the families table (hash partitions, or 0:
	// a plain table); nil: the backend has no tables.
	PartitionFamilies func(ctx context.Context, db string, partitions int, logger *slog.Logger) (PartitionResult, error)
	// compact rewrites the database without its free pages (offline);
	// nil: the backend has no such command.
	Compact func(ctx context.Context, db string, logger *slog.Logger) (CompactReport, error)
}

// Inspect reads db's schema and signing keys without writing anything.
func Inspect(ctx context.Context, db string) (Inspection, error) {
	return Of(db).inspect(ctx, db)
}

// SchemaVersions is, for each backend, the schema this build reads and
// writes and the older ones it upgrades (`oauthd version`).
func SchemaVersions() []SchemaVersion {
	pg := postgres.SchemaVersion()
	var pgOlder []string
	for v := 1; v < pg; v++ {
		pgOlder = append(pgOlder, strconv.Itoa(v))
	}
	return []SchemaVersion{
		{Backend: "bbolt", Reads: bolt.SchemaVersion, Upgrades: slices.Clone(bolt.UpgradableSchemas)},
		{Backend: "postgres", Reads: strconv.Itoa(pg), Upgrades: pgOlder},
	}
}

// schemes maps the scheme of a --db URL to its backend. Any other --db is
// a bbolt file (fileBackend).
var schemes = map[string]*Backend{"postgres": &pgBackend, "postgresql": &pgBackend}

var fileBackend = &boltBackend

// Of is the backend --db names.
func Of(db string) *Backend {
	if scheme, _, ok := strings.Cut(db, "://"); ok {
		if b, ok := schemes[scheme]; ok {
			return b
		}
	}
	return fileBackend
}

// Open opens db for mode.
func Open(ctx context.Context, db string, mode Mode, logger *slog.Logger) (*Database, error) {
	return OpenWith(ctx, db, mode, logger, Options{})
}

// Options are serve's settings of the database beyond --db.
type Options struct {
	// SessionURL: --db-session-url, where the connections that need a
	// session (LISTEN) go when --db is a transaction pool.
	SessionURL string
}

// OpenWith is Open with serve's options.
func OpenWith(ctx context.Context, db string, mode Mode, logger *slog.Logger, o Options) (*Database, error) {
	return Of(db).open(ctx, db, mode, logger, o)
}

// CheckSessionURL checks --db-session-url against --db (serve's check,
// before any side effect).
func CheckSessionURL(db, session string) error {
	b := Of(db)
	if b.checkSession == nil {
		if session != "" {
			return fmt.Errorf("--db-session-url %s: both must be postgres:// URLs (it is for a PostgreSQL --db behind a transaction pool); --db %s needs none", postgres.Redact(session), Redact(db))
		}
		return nil
	}
	return b.checkSession(db, session)
}

// Redact is db for messages and logs: a URL without its password.
func Redact(db string) string { return Of(db).redact(db) }

// AdminSocket is the path of serve's admin socket for db, or "" when the
// backend is shared and the CLI works on the database itself.
func AdminSocket(db string) string {
	if Of(db).Shared {
		return ""
	}
	return socketBeside(db)
}

func socketBeside(file string) string { return file + ".sock" }

// Scratch is an empty store in memory, for what needs no database
// (oauthd-bench's gateway mode).
func Scratch() data.Store { return memory.New() }

var pgBackend = Backend{
	Shared:  true,
	redact:  postgres.Redact,
	Migrate: postgres.Migrate,
	PartitionFamilies: func(ctx context.Context, db string, partitions int, logger *slog.Logger) (PartitionResult, error) {
		r, err := postgres.PartitionFamilies(ctx, db, partitions, logger)
		return PartitionResult{From: r.From.Partitions, To: r.To.Partitions, Converted: r.Converted, Families: r.Families, Took: r.Took}, err
	},
	checkSession: postgres.CheckPooledURL,
	inspect: func(ctx context.Context, db string) (Inspection, error) {
		in, err := postgres.Inspect(ctx, db)
		if err != nil {
			return Inspection{}, fmt.Errorf("open database %s: %w", postgres.Redact(db), err)
		}
		return Inspection{Keys: in.Keys}, nil
	},
	open: func(ctx context.Context, db string, mode Mode, logger *slog.Logger, o Options) (*Database, error) {
		opts := postgres.Options{Logger: logger, MaxConns: 4, Migrate: mode == ForCopyTo}
		if mode == ForServe {
			// Replicas that start together migrate once (advisory lock).
			// The change listener needs a session: a transaction pool in
			// the way is refused first, with what to set, rather than
			// every replica's caches going stale unnoticed (and before
			// the migration: a refused start changes nothing).
			opts = postgres.Options{Logger: logger, Migrate: true, SessionURL: o.SessionURL, CheckSession: true}
		}
		s, err := postgres.Open(ctx, db, opts)
		if err != nil {
			return nil, fmt.Errorf("open database %s: %w", postgres.Redact(db), err)
		}
		return &Database{Store: s, Collectors: s.Collectors(), Audit: s, Throttle: pgRows{s}, GC: s.ThrottleGC,
			Follow: func(ctx context.Context, fn func(context.Context, Change)) {
				s.Listen(ctx, postgres.ListenOptions{}, func(ctx context.Context, e postgres.Event) {
					c := Change{Reset: e.Reset, Kind: e.Kind}
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

var boltBackend = Backend{
	redact: func(db string) string { return db },
	inspect: func(_ context.Context, db string) (Inspection, error) {
		in, err := bolt.Inspect(db, bolt.Options{Timeout: time.Second})
		switch {
		case errors.Is(err, bolt.ErrLocked):
			return Inspection{}, boltInUse(db)
		case err != nil:
			return Inspection{}, err
		}
		return Inspection{Keys: in.Keys}, nil
	},
	Compact: func(ctx context.Context, db string, logger *slog.Logger) (CompactReport, error) {
		r, err := bolt.Compact(ctx, db, bolt.Options{Logger: logger})
		switch {
		case errors.Is(err, bolt.ErrNoDatabase):
			return CompactReport{}, noDatabase(db, err)
		case errors.Is(err, bolt.ErrLocked):
			return CompactReport{}, fmt.Errorf("%s is in use by a running oauthd serve; stop it first", db)
		case err != nil:
			return CompactReport{}, err
		}
		return CompactReport{BytesBefore: r.BytesBefore, BytesAfter: r.BytesAfter, FreePagesBefore: r.FreePagesBefore}, nil
	},
	open: func(_ context.Context, db string, mode Mode, logger *slog.Logger, _ Options) (*Database, error) {
		opts := bolt.Options{Timeout: time.Second, Logger: logger}
		switch mode {
		case ForCLI:
			opts.MustExist = true
		case ForCLIRead:
			opts.MustExist, opts.ReadOnly = true, true
		case ForCopyFrom:
			if _, err := os.Stat(db); err != nil {
				return nil, fmt.Errorf("open %s: %w", db, err)
			}
		case ForCopyTo:
			if _, err := os.Stat(db); err == nil {
				return nil, fmt.Errorf("%s exists; copy into a new file", db)
			}
		}
		s, err := bolt.Open(db, opts)
		switch {
		case errors.Is(err, bolt.ErrNoDatabase):
			return nil, noDatabase(db, err)
		case errors.Is(err, bolt.ErrLocked) && mode == ForServe:
			return nil, boltInUse(db)
		case errors.Is(err, bolt.ErrLocked) && (mode == ForCLI || mode == ForCLIRead):
			return nil, fmt.Errorf("database %s is locked by another process but no admin socket answers at %s; is an older oauthd running?", db, socketBeside(db))
		case errors.Is(err, bolt.ErrLocked):
			return nil, fmt.Errorf("%s is in use by a running oauthd serve; stop it first", db)
		case err != nil:
			return nil, err // bolt's errors name the file already
		}
		d := &Database{Store: s, Collectors: s.Collectors()}
		if mode == ForCopyTo {
			d.Discard = func(err error) {
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
