package bolt

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"go.opentelemetry.io/otel"

	"oauthd/data"
	"oauthd/data/bolt/internal/wal"
)

// Errors of package bolt, besides the sentinels of package data.
var (
	// ErrLocked: another process holds the database file open.
	ErrLocked = errors.New("database is locked")
	// ErrClosed: the store was closed.
	ErrClosed = wal.ErrClosed
	// ErrSchema: the file was written by an incompatible version of oauthd.
	ErrSchema = errors.New("unsupported database schema version")
	// ErrFailed: a write to the write-ahead log, its flush or a
	// checkpoint failed; the store refuses every hot write and read until
	// it is reopened, and calls Options.OnFatal.
	ErrFailed = wal.ErrFailed
	// ErrNoDatabase: Options.MustExist was set and there is no oauthd
	// database at the path (no file, an empty file, or a bbolt file that
	// oauthd never set up). Nothing was created.
	ErrNoDatabase = errors.New("no oauthd database")
	// ErrReadOnly: a write to a store opened with Options.ReadOnly.
	ErrReadOnly = wal.ErrReadOnly
)

// schemaVersion is the layout of the buckets below; Open upgrades
// schemaIdentity's to it (upgradeIdentity) and refuses any other.
//
//	"1": users_email and users_username keyed by strings.ToLower; a
//	     client's owner is an email ("owner").
//	"2": those indexes keyed by ident.Key; a client's owner is a user ID
//	     (data.Client.OwnerID, or UnclaimedOwner).
const schemaVersion = "2"

// schemaIdentity is the version before identities by ID (issue 22).
const schemaIdentity = "1"

// Buckets.
var (
	bucketMeta        = []byte("meta")
	bucketUsers       = []byte("users")          // 8-byte big-endian ID → User
	bucketUserEmail   = []byte("users_email")    // lower-cased email → ID
	bucketUserName    = []byte("users_username") // lower-cased username → ID
	bucketClients     = []byte("clients")        // ID → Client
	bucketCodes       = []byte("auth_codes")     // SHA-256 → AuthCode
	bucketFamilies    = []byte("families")       // ID → Family
	bucketFamByClient = []byte("families_by_client")
	bucketGrants      = []byte("grants")           // 8-byte user ID + client ID → Grant
	bucketSessions    = []byte("sessions")         // SHA-256 → Session
	bucketKeys        = []byte("keys")             // keySetKey → []SigningKey
	bucketUserExt     = []byte("users_external")   // external ID → ID
	bucketUserOff     = []byte("users_disabled")   // 8-byte ID → "" while the user is disabled
	bucketNonces      = []byte("nonces")           // key → 8-byte expiry (Unix ns)
	bucketRevoked     = []byte("revoked")          // grant ID → Revocation (JSON)
	bucketFamByUser   = []byte("families_by_user") // 8-byte user ID + client ID + 0 + family ID → ""
	bucketExpiry      = []byte("expiry")           // 8-byte time + hot bucket + key → "" (expiry.go)
	bucketAgents      = []byte("agent_hosts")      // canonical host → AgentHost (JSON)
	// bucketDevices is created when missing (no schema change): a file
	// without it reads as one without device codes.
	bucketDevices = []byte("device_codes") // canonical user code → DeviceCode (JSON)

	allBuckets = [][]byte{bucketMeta, bucketUsers, bucketUserEmail, bucketUserName, bucketClients,
		bucketCodes, bucketFamilies, bucketFamByClient, bucketGrants, bucketSessions, bucketKeys,
		bucketUserExt, bucketUserOff, bucketNonces, bucketRevoked, bucketFamByUser, bucketExpiry, bucketAgents, bucketDevices}

	keySchema = []byte("schema_version")
	// keyUserIndex marks a file whose families_by_user index is complete
	// (see buildUserIndex).
	keyUserIndex = []byte("families_by_user_built")
	// keyExpiryIndex marks a file whose expiry index is complete (see
	// buildExpiryIndex).
	keyExpiryIndex = []byte("expiry_built")
	keySetKey      = []byte("set")
)

// The hot buckets: the writes of the hot path (codes, refresh-token
// families, sessions, tombstones, nonces) go through the write-ahead log
// (package internal/wal), by these indexes. Their order is part of the
// log's format: a new one goes at the end.
const (
	hotCodes = iota
	hotFamilies
	hotFamByClient
	hotSessions
	hotRevoked
	hotNonces
	hotFamByUser
	hotExpiry
)

var hotBuckets = [][]byte{bucketCodes, bucketFamilies, bucketFamByClient, bucketSessions, bucketRevoked, bucketNonces, bucketFamByUser, bucketExpiry}

// hotFill is the fill percent of each hot bucket in the bbolt file (0:
// bbolt's default); see appendFill.
var hotFill = []float64{hotFamilies: appendFill, hotFamByClient: appendFill}

var _ data.Store = (*Store)(nil)

// Options configure [Open].
type Options struct {
	// Timeout is how long Open waits for the file lock held by another
	// process before it fails with [ErrLocked]. Default 1s.
	Timeout time.Duration
	// Logger receives operational events (never a record's secret fields).
	// Default: discard.
	Logger *slog.Logger
	// MustExist makes Open fail with [ErrNoDatabase], creating and
	// writing nothing, when path holds no oauthd database yet, and with
	// [ErrSchema], writing nothing, when it holds one of an older schema
	// (it is not upgraded). Only the commands that set a database up
	// (serve) leave it false: they check everything before they open it
	// (see [Inspect]), so that a refused start changes nothing.
	MustExist bool
	// OnFatal is called, once, when a write to the write-ahead log, its
	// flush (fdatasync) or a checkpoint fails, before any writer whose
	// write it may have lost gets an answer. After a failed fdatasync the
	// kernel may already have dropped the unwritten pages, so neither a
	// retry nor this process's memory can be trusted: the process must
	// stop, and a restart recovers from what is on disk (PostgreSQL has
	// done the same since 2018, the "fsyncgate"). Meanwhile the store
	// refuses every hot write and read with [ErrFailed].
	//
	// Default: log the error on Logger and exit the process with
	// [ExitFatal]. Tests set it to observe the failure instead.
	OnFatal func(error)

	// sync replaces the write-ahead log's flush (tests; export_test.go).
	sync func(*os.File) error

	// ReadOnly opens the file for reading only (implies MustExist): Open
	// writes nothing, to the file or its write-ahead log, and every write
	// fails with an error wrapping [ErrReadOnly]. The file must hold this
	// version's schema. The commands that only read (list, show) use it.
	ReadOnly bool
}

// ExitFatal is the exit status of the process that the default
// [Options.OnFatal] stops: EX_IOERR of sysexits.h. A supervisor should
// restart it; the new process recovers the database from the disk.
const ExitFatal = 74

// Store is a [data.Store] on a bbolt file and its write-ahead log. Open
// it with [Open]; Close it.
type Store struct {
	db     *bbolt.DB
	log    *wal.Log // the hot buckets' writes
	logger *slog.Logger
	closed atomic.Bool
	// sweepBatch bounds the index entries one transaction of the sweep
	// visits (gc.go); afterBatch, when set, runs after each (tests).
	sweepBatch int
	afterBatch func()
}

// CommitStats is what the write-ahead log's group committer has done since
// Open (for metrics).
type CommitStats = wal.Stats

// Open opens (creating it if needed) the database at path, creates its
// buckets and starts the group committer. When another process holds the
// file, it fails after opts.Timeout with an error wrapping [ErrLocked].
func Open(path string, opts Options) (*Store, error) {
	opts = opts.withDefaults(path)
	db, err := openDB(path, opts)
	if err != nil {
		return nil, err
	}
	if opts.ReadOnly {
		return openReadOnly(db, path, opts)
	}
	if opts.MustExist {
		if err := db.View(func(tx *bbolt.Tx) error { return hasSchema(tx, path) }); err != nil {
			db.Close()
			return nil, err
		}
	}
	if err := db.Update(func(tx *bbolt.Tx) error { return setUp(tx, opts) }); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	log, err := wal.Open(db, path+"-wal", wal.Options{Meta: bucketMeta, Buckets: hotBuckets, FillPercent: hotFill,
		Logger: opts.Logger, OnFatal: opts.OnFatal, Sync: opts.sync})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if err := buildIndexes(db); err != nil {
		log.Close()
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	noteFreePages(db, path, opts.Logger)
	return &Store{db: db, log: log, logger: opts.Logger, sweepBatch: sweepBatch}, nil
}

// withDefaults fills in the defaults of opts for the file at path.
func (opts Options) withDefaults(path string) Options {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.OnFatal == nil {
		logger := opts.Logger
		if logger == nil { // the process stops: say why somewhere
			logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
		}
		opts.OnFatal = func(err error) {
			logger.Error("stopping: the database could not be written to disk; restart oauthd to recover it from the disk",
				"path", path, "err", err, "exit_status", ExitFatal)
			os.Exit(ExitFatal)
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return opts
}

// openDB opens the bbolt file at path: never creating it when opts say
// it must exist, and failing with [ErrLocked] when another process holds
// it past opts.Timeout.
func openDB(path string, opts Options) (*bbolt.DB, error) {
	bopts := &bbolt.Options{Timeout: opts.Timeout, ReadOnly: opts.ReadOnly}
	if opts.MustExist || opts.ReadOnly {
		if err := checkExists(path); err != nil {
			return nil, err
		}
		// Never O_CREATE, even if the file went away since the check.
		bopts.OpenFile = func(name string, flag int, mode os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag&^os.O_CREATE, mode)
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%s: %w", name, ErrNoDatabase)
			}
			return f, err
		}
	}
	db, err := openFile(path, bopts)
	switch {
	case errors.Is(err, ErrNoDatabase):
		return nil, err
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("database %s is in use by another process (is `oauthd serve` running on it?): %w", path, ErrLocked)
	case err != nil:
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	return db, nil
}

// hasSchema refuses, with [ErrNoDatabase], a bbolt file that oauthd
// never set up (no schema): it is empty.
func hasSchema(tx *bbolt.Tx, path string) error {
	if b := tx.Bucket(bucketMeta); b == nil || b.Get(keySchema) == nil {
		return fmt.Errorf("%s holds no oauthd schema: %w", path, ErrNoDatabase)
	}
	return nil
}

// setUp creates the buckets this build knows and brings the schema to
// schemaVersion: a new file gets it, a file of the identity schema is
// upgraded (unless opts.MustExist), any other version is refused.
func setUp(tx *bbolt.Tx, opts Options) error {
	// A bucket this build does not know was made by a newer oauthd:
	// refuse the file rather than ignore what it holds (running an
	// older binary on it would, say, let a user disabled since log
	// in). A rollback is restoring the backup taken before the
	// upgrade (docs/PRODUCTION.md).
	if m := tx.Bucket(bucketMeta); m == nil || m.Get(keySchema) == nil {
		// Not an oauthd file yet: nothing of it to understand.
	} else if err := checkBuckets(tx); err != nil {
		return err
	}
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	meta := tx.Bucket(bucketMeta)
	switch v := meta.Get(keySchema); {
	case v == nil:
		if err := meta.Put(keyExpiryIndex, []byte("1")); err != nil { // a new file: nothing to index
			return err
		}
		return meta.Put(keySchema, []byte(schemaVersion))
	case string(v) == schemaIdentity && opts.MustExist:
		return schemaError(string(v))
	case string(v) == schemaIdentity:
		if err := upgradeIdentity(tx, opts.Logger); err != nil {
			return fmt.Errorf("upgrade to schema %s: %w", schemaVersion, err)
		}
		return meta.Put(keySchema, []byte(schemaVersion))
	case string(v) != schemaVersion:
		return schemaError(string(v))
	}
	return nil
}

// buildIndexes builds the indexes a file may lack. The log is replayed
// into the file and nothing else writes yet: they can be built on the
// file alone.
func buildIndexes(db *bbolt.DB) error {
	if err := db.Update(buildUserIndex); err != nil {
		return fmt.Errorf("index families by user: %w", err)
	}
	if err := buildExpiryIndex(db); err != nil {
		return fmt.Errorf("index records by expiry: %w", err)
	}
	return nil
}

// noteFreePages tells the operator when the file holds many free pages.
func noteFreePages(db *bbolt.DB, path string, logger *slog.Logger) {
	free := db.Stats().FreePageN
	logger.Debug("database opened", "path", path, "free_pages", free)
	if free >= freePagesNotice {
		logger.Info("the database file holds many free pages, which bbolt keeps in memory as its free list; `oauthd store compact` gives them back (offline)",
			"path", path, "free_pages", free, "free_mib", free*db.Info().PageSize>>20)
	}
}

// freePagesNotice is the count of free pages (256 MiB of 4 KiB pages,
// about 15 MiB of free list) from which Open says that compacting
// would give memory back.
const freePagesNotice = 1 << 16

// FreePages is how many free pages the bbolt file holds: pages of deleted
// records, which bbolt reuses for new ones and keeps in memory meanwhile
// (its free list, about 60 bytes per page, docs/PERFORMANCE.md); [Compact]
// returns them.
func (s *Store) FreePages() int { return s.db.Stats().FreePageN }

// openFile opens the bbolt file at path and takes its lock. A file that
// [Compact] replaced while this process waited for the lock (it renames
// its copy over path, then lets the old file's lock go) is closed and
// path opened again, so that no process serves the old, unlinked file.
func openFile(path string, bopts *bbolt.Options) (*bbolt.DB, error) {
	base := bopts.OpenFile
	if base == nil {
		base = os.OpenFile
	}
	o := *bopts
	for range 3 {
		var f *os.File
		o.OpenFile = func(name string, flag int, mode os.FileMode) (*os.File, error) {
			var err error
			f, err = base(name, flag, mode)
			return f, err
		}
		db, err := bbolt.Open(path, 0o600, &o)
		if err != nil || f == nil {
			return db, err
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || os.SameFile(held, now) {
			return db, nil
		}
		db.Close() // replaced meanwhile
	}
	return nil, fmt.Errorf("open database %s: the file was replaced while waiting for its lock, three times", path)
}

// openReadOnly finishes Open of a file opened read-only: it checks the
// schema and the buckets, and opens the write-ahead log for reading.
func openReadOnly(db *bbolt.DB, path string, opts Options) (*Store, error) {
	err := db.View(func(tx *bbolt.Tx) error {
		if err := hasSchema(tx, path); err != nil {
			return err
		}
		if v := tx.Bucket(bucketMeta).Get(keySchema); string(v) != schemaVersion {
			return schemaError(string(v))
		}
		for _, name := range allBuckets {
			// agent_hosts and device_codes: read as empty until serve creates them
			if tx.Bucket(name) == nil && !bytes.Equal(name, bucketAgents) && !bytes.Equal(name, bucketDevices) {
				return fmt.Errorf("%w: %s lacks the bucket %s (an older oauthd made it): start `oauthd serve` on it once to upgrade it", ErrSchema, path, name)
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		if errors.Is(err, ErrNoDatabase) {
			return nil, err // names the file
		}
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	log, err := wal.OpenReadOnly(db, path+"-wal", wal.Options{Meta: bucketMeta, Buckets: hotBuckets, FillPercent: hotFill, Logger: opts.Logger})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	opts.Logger.Debug("database opened", "path", path, "read_only", true)
	return &Store{db: db, log: log, logger: opts.Logger}, nil
}

// checkExists fails with ErrNoDatabase when path is missing or empty.
func checkExists(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s does not exist: %w", path, ErrNoDatabase)
	case err != nil:
		return fmt.Errorf("open database %s: %w", path, err)
	case fi.Size() == 0:
		return fmt.Errorf("%s is empty: %w", path, ErrNoDatabase)
	}
	return nil
}

// Close commits every queued write, checkpoints the write-ahead log and
// closes the files. Calls after Close fail with [ErrClosed]; a second Close
// returns nil.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	werr := s.log.Close()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	return werr
}

// CloseWithoutLog checkpoints the write-ahead log, closes the store and
// removes the log file, leaving the bbolt file as the whole database: for
// a copy meant to be moved or kept as a backup (store copy). Without a
// successful checkpoint the log holds writes the file lacks; it then stays,
// and the error says so.
func (s *Store) CloseWithoutLog(ctx context.Context) error {
	if s.closed.Swap(true) {
		return fmt.Errorf("remove the write-ahead log: %w", ErrClosed)
	}
	// Closed: no call starts a write any more (the caller has none in
	// flight), so after this checkpoint the log holds no record the file
	// lacks.
	cerr := s.log.Checkpoint(ctx)
	werr := s.log.Close()
	path := s.db.Path()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	if err := cmp.Or(cerr, werr); err != nil {
		return fmt.Errorf("checkpoint before removing the write-ahead log (it stays; the next open applies it): %w", err)
	}
	if err := os.Remove(path + "-wal"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the write-ahead log (the file is whole without it): %w", err)
	}
	return wal.SyncDir(filepath.Dir(path))
}

// Checkpoint copies every write acknowledged so far from the write-ahead
// log into the bbolt file (which then holds the whole database on its own)
// and starts the log over. The store does it by itself as the log grows,
// and on Close.
func (s *Store) Checkpoint(ctx context.Context) error { return s.log.Checkpoint(ctx) }

// CommitStats reports the group committer's counters: Ops/Commits is the
// mean batch size, Time/Commits the mean commit latency.
func (s *Store) CommitStats() CommitStats { return s.log.Stats() }

// Path returns the database file's path.
func (s *Store) Path() string { return s.db.Path() }

// begin checks ctx and the closed flag before a call starts work.
func (s *Store) begin(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if s.closed.Load() {
		return fmt.Errorf("%s: %w: %w", op, data.ErrUnavailable, ErrClosed)
	}
	return nil
}

// unavailable is the one place that says which of the engine's errors
// mean the store cannot serve now: closed (a shutdown under way) or
// failed (a write to the log failed; nothing is written until a reopen).
// They are wrapped in [data.ErrUnavailable]; anything else is returned
// as it is.
func unavailable(err error) error {
	if err == nil || errors.Is(err, data.ErrUnavailable) {
		return err
	}
	if errors.Is(err, ErrClosed) || errors.Is(err, ErrFailed) || errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("%w: %w", data.ErrUnavailable, err)
	}
	return err
}

// view runs fn in a read transaction.
func (s *Store) view(ctx context.Context, op string, fn func(tx *bbolt.Tx) error) (err error) {
	_, span := data.StartSpan(ctx, tracer, "bolt ", op)
	defer func() { data.EndSpan(span, err) }()
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	return unavailable(s.db.View(fn))
}

// update runs fn in its own write transaction (the path of the writes that
// are not hot: users, clients, grants, keys, GC).
func (s *Store) update(ctx context.Context, op string, fn func(tx *bbolt.Tx) error) (err error) {
	_, span := data.StartSpan(ctx, tracer, "bolt ", op)
	defer func() { data.EndSpan(span, err) }()
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	if s.db.IsReadOnly() {
		return fmt.Errorf("%s: %w", op, ErrReadOnly)
	}
	return unavailable(s.db.Update(fn))
}

// write runs fn as one op of the write-ahead log's group commit.
// Its span is the parent of the log's write and fsync spans.
func (s *Store) write(ctx context.Context, op string, fn func(w *wal.Tx) error) (err error) {
	ctx, span := data.StartSpan(ctx, tracer, "bolt ", op)
	defer func() { data.EndSpan(span, err) }()
	return unavailable(s.log.Write(ctx, op, fn))
}

// exclusive runs fn alone on the bbolt file (wal.Log.Exclusive).
func (s *Store) exclusive(ctx context.Context, op string, writable bool, fn func(tx *bbolt.Tx) error) (err error) {
	ctx, span := data.StartSpan(ctx, tracer, "bolt ", op)
	defer func() { data.EndSpan(span, err) }()
	return unavailable(s.log.Exclusive(ctx, op, writable, fn))
}

// tracer names the spans of the store's operations ("bolt rotate refresh
// token"), children of the request's.
var tracer = otel.Tracer("oauthd/data/bolt")

// Encoding helpers.

func itob(v int64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(v))
	return b
}

// get decodes the record under key into v; false when there is none.
func get(b *bbolt.Bucket, key []byte, v any) (bool, error) {
	raw := b.Get(key)
	if raw == nil {
		return false, nil
	}
	if err := jsonUnmarshal(raw, v); err != nil {
		return false, err
	}
	return true, nil
}

// put JSON-encodes v under key, in a transaction of the non-hot writes
// (families go through the write-ahead log, in their binary form).
func put(b *bbolt.Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode record: %w", err)
	}
	return b.Put(key, raw)
}

// jsonUnmarshal decodes a record: JSON, or for a family or a code either
// form (see decodeFamily, decodeAuthCode).
func jsonUnmarshal(raw []byte, v any) error {
	var err error
	switch v := v.(type) {
	case *data.Family:
		err = decodeFamily(raw, v)
	case *data.AuthCode:
		err = decodeAuthCode(raw, v)
	default:
		err = json.Unmarshal(raw, v)
	}
	if err != nil {
		return fmt.Errorf("decode record: %w", err)
	}
	return nil
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
