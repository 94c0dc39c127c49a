package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

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
	// ErrFailed: a write to the write-ahead log failed; the store refuses
	// writes until it is reopened.
	ErrFailed = wal.ErrFailed
	// ErrNoDatabase: Options.MustExist was set and there is no oauthd
	// database at the path (no file, an empty file, or a bbolt file that
	// oauthd never set up). Nothing was created.
	ErrNoDatabase = errors.New("no oauthd database")
)

// schemaVersion is the layout of the buckets below; Open refuses any other.
const schemaVersion = "1"

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
	bucketGrants      = []byte("grants")         // 8-byte user ID + client ID → Grant
	bucketSessions    = []byte("sessions")       // SHA-256 → Session
	bucketKeys        = []byte("keys")           // keySetKey → []SigningKey
	bucketUserExt     = []byte("users_external") // external ID → ID
	bucketUserOff     = []byte("users_disabled") // 8-byte ID → "" while the user is disabled
	bucketNonces      = []byte("nonces")         // key → 8-byte expiry (Unix ns)
	bucketRevoked     = []byte("revoked")        // grant ID → Revocation (JSON)

	allBuckets = [][]byte{bucketMeta, bucketUsers, bucketUserEmail, bucketUserName, bucketClients,
		bucketCodes, bucketFamilies, bucketFamByClient, bucketGrants, bucketSessions, bucketKeys,
		bucketUserExt, bucketUserOff, bucketNonces, bucketRevoked}

	keySchema = []byte("schema_version")
	keySetKey = []byte("set")
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
)

var hotBuckets = [][]byte{bucketCodes, bucketFamilies, bucketFamByClient, bucketSessions, bucketRevoked, bucketNonces}

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
	// SyncHoldsProc makes the fdatasync of the write-ahead log keep its Go
	// processor (P) while the thread waits for the disk (Linux only).
	//
	// An ordinary blocking system call lets the scheduler's monitor take
	// the P away after 20µs and hand it to another thread; when the flush
	// returns, the goroutine has no P and queues for one behind busy
	// goroutines, and the monitor, which found work to do, keeps polling
	// every 20µs. With a flush always in flight under load, that costs
	// several thread switches per flush and delays every answer. Holding
	// the P avoids all three, at two costs: the P runs no other goroutine
	// during the flush, so the caller should raise GOMAXPROCS by one
	// ([ReserveSyncProc]); and a
	// stop-the-world phase of the garbage collector waits for the flush to
	// end. So that a slow disk cannot stall the whole process, a flush that
	// follows one of 2ms or more releases its P as usual
	// (CommitStats.ReleasedSyncs counts them). See docs/DESIGN.md "Holding
	// the P through the flush" for the measurements.
	SyncHoldsProc bool
	// MustExist makes Open fail with [ErrNoDatabase], creating and
	// writing nothing, when path holds no oauthd database yet. Only the
	// commands that set a database up (serve) leave it false.
	MustExist bool
}

// Store is a [data.Store] on a bbolt file and its write-ahead log. Open
// it with [Open]; Close it.
type Store struct {
	db     *bbolt.DB
	log    *wal.Log // the hot buckets' writes
	logger *slog.Logger
	closed atomic.Bool
}

// CommitStats is what the write-ahead log's group committer has done since
// Open (for metrics).
type CommitStats = wal.Stats

// Open opens (creating it if needed) the database at path, creates its
// buckets and starts the group committer. When another process holds the
// file, it fails after opts.Timeout with an error wrapping [ErrLocked].
func Open(path string, opts Options) (*Store, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	bopts := &bbolt.Options{Timeout: opts.Timeout}
	if opts.MustExist {
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
	db, err := bbolt.Open(path, 0o600, bopts)
	if errors.Is(err, ErrNoDatabase) {
		return nil, err
	}
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("database %s is in use by another process (is `oauthd serve` running on it?): %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if opts.MustExist {
		// A bbolt file that oauthd never set up (no schema) is empty.
		err := db.View(func(tx *bbolt.Tx) error {
			if b := tx.Bucket(bucketMeta); b == nil || b.Get(keySchema) == nil {
				return fmt.Errorf("%s holds no oauthd schema: %w", path, ErrNoDatabase)
			}
			return nil
		})
		if err != nil {
			db.Close()
			return nil, err
		}
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		// A bucket this build does not know was made by a newer oauthd:
		// refuse the file rather than ignore what it holds (running an
		// older binary on it would, say, let a user disabled since log
		// in). A rollback is restoring the backup taken before the
		// upgrade (docs/PRODUCTION.md).
		if m := tx.Bucket(bucketMeta); m == nil || m.Get(keySchema) == nil {
			// Not an oauthd file yet: nothing of it to understand.
		} else if err := tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
			if !slices.ContainsFunc(allBuckets, func(b []byte) bool { return bytes.Equal(b, name) }) {
				return fmt.Errorf("%w: the file was written by a newer oauthd (it holds %q, which this one does not know); "+
					"run that oauthd, or restore the backup taken before the upgrade", ErrSchema, name)
			}
			return nil
		}); err != nil {
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
			return meta.Put(keySchema, []byte(schemaVersion))
		case string(v) != schemaVersion:
			return fmt.Errorf("%w %q (this oauthd reads %q)", ErrSchema, v, schemaVersion)
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	log, err := wal.Open(db, path+"-wal", wal.Options{Meta: bucketMeta, Buckets: hotBuckets, FillPercent: hotFill,
		Logger: opts.Logger, HoldProc: opts.SyncHoldsProc})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	opts.Logger.Debug("database opened", "path", path)
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
		return fmt.Errorf("%s: %w", op, ErrClosed)
	}
	return nil
}

// view runs fn in a read transaction.
func (s *Store) view(ctx context.Context, op string, fn func(tx *bbolt.Tx) error) error {
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	return s.db.View(fn)
}

// update runs fn in its own write transaction (the path of the writes that
// are not hot: users, clients, grants, keys, GC).
func (s *Store) update(ctx context.Context, op string, fn func(tx *bbolt.Tx) error) error {
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	return s.db.Update(fn)
}

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
