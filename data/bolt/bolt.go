package bolt

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"oauthd/data"
)

// Errors of package bolt, besides the sentinels of package data.
var (
	// ErrLocked: another process holds the database file open.
	ErrLocked = errors.New("database is locked")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("bolt store is closed")
	// ErrSchema: the file was written by an incompatible version of oauthd.
	ErrSchema = errors.New("unsupported database schema version")
	// ErrFailed: a write to the write-ahead log failed; the store refuses
	// writes until it is reopened.
	ErrFailed = errors.New("bolt store failed")
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

	keySchema  = []byte("schema_version")
	keyWALGen  = []byte("wal_checkpointed") // the last log generation in the file
	keyWALSalt = []byte("wal_salt")         // random, binds the log to this file
	keySetKey  = []byte("set")
)

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

// Store is a [data.Store] on a bbolt file. Open it with [Open]; Close it.
type Store struct {
	db     *bbolt.DB
	logger *slog.Logger

	mu     sync.RWMutex // guards sending on ops against Close
	closed atomic.Bool
	ops    chan *op
	done   chan struct{} // closed when the committer has exited
	stats  commitStats

	// The write-ahead log (wal.go) and the group committer (commit.go).
	wal    *os.File
	ov     overlay
	slots  chan struct{} // a token per batch whose sync is in flight
	syncq  chan *batch
	hold   bool // Options.SyncHoldsProc
	failed atomic.Pointer[error]
	// Owned by the committer:
	seed     uint32 // checksum of the log's salt (wal.go)
	gen, seq uint64 // the log's live generation; the last record's sequence
	walOff   int64  // where the next record goes
	walSize  int64  // the log file's size
	rec      []byte // the record being written
	w        wtx
}

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
	s := &Store{
		db:     db,
		logger: opts.Logger,
		ops:    make(chan *op, maxBatch),
		done:   make(chan struct{}),
		slots:  make(chan struct{}, maxSyncs),
		syncq:  make(chan *batch, maxSyncs),
		ov:     overlay{m: make(map[string]entry)},
		hold:   opts.SyncHoldsProc,
	}
	s.w.ov = &s.ov
	if err := s.recover(path); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	for range maxSyncs {
		go s.syncer()
	}
	go s.commitLoop()
	opts.Logger.Debug("database opened", "path", path)
	return s, nil
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

// Close stops the group committer after it has committed every queued write,
// then closes the file. Calls after Close fail with [ErrClosed]; a second
// Close returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return nil
	}
	s.closed.Store(true)
	close(s.ops)
	s.mu.Unlock()
	<-s.done
	werr := s.wal.Close()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	if werr != nil {
		return fmt.Errorf("close write-ahead log: %w", werr)
	}
	return nil
}

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

// recover opens the write-ahead log of the database at path and copies into
// the bbolt file the writes of the generation after the checkpointed one,
// in one transaction that also marks that generation checkpointed, so that
// this session's log starts at a generation never used before.
func (s *Store) recover(path string) error {
	var ckpt uint64
	err := s.db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(keyWALGen); len(v) == 8 {
			ckpt = binary.BigEndian.Uint64(v)
		}
		salt := bytes.Clone(meta.Get(keyWALSalt))
		if salt == nil {
			salt = make([]byte, 16)
			rand.Read(salt)
			if err := meta.Put(keyWALSalt, salt); err != nil {
				return err
			}
		}
		s.seed = walSeed(salt)
		return nil
	})
	if err != nil {
		return err
	}
	f, err := openWAL(walPath(path))
	if err != nil {
		return fmt.Errorf("write-ahead log: %w", err)
	}
	fi, err := f.Stat()
	if err == nil {
		var muts []mutation
		muts, _, err = readWAL(f, fi.Size(), s.seed, ckpt+1)
		if err == nil {
			err = s.db.Update(func(tx *bbolt.Tx) error {
				for _, m := range muts {
					if err := apply(tx.Bucket(hotNames[m.bucket]), m.key, m.val, m.del); err != nil {
						return err
					}
				}
				return tx.Bucket(bucketMeta).Put(keyWALGen, u64(ckpt+1))
			})
		}
		if err == nil && len(muts) > 0 {
			s.logger.Info("replayed the write-ahead log", "writes", len(muts))
		}
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("replay write-ahead log %s: %w", walPath(path), err)
	}
	s.wal, s.walSize, s.gen = f, fi.Size(), ckpt+2
	return nil
}

// u64 is v in 8 big-endian bytes.
func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
