package wal

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	bbolt "go.etcd.io/bbolt"
)

// Errors of package wal.
var (
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("bolt store is closed")
	// ErrFailed: a write to the log, its flush or a checkpoint failed;
	// the log refuses every write and read until the database is
	// reopened (see Options.OnFatal).
	ErrFailed = errors.New("bolt store failed")
)

// The log's own keys in the Options.Meta bucket of the bbolt file.
var (
	keyGen  = []byte("wal_checkpointed") // the last log generation in the file
	keySalt = []byte("wal_salt")         // random, binds the log to this file
)

// Options configure [Open].
type Options struct {
	// Meta is the bbolt bucket (it must exist) where the log keeps its
	// generation and salt.
	Meta []byte
	// Buckets are the hot buckets (they must exist), the only ones a
	// [Tx] reads and writes. A bucket's index in this list is written in
	// the log: a list may only grow at its end.
	Buckets [][]byte
	// FillPercent, by index of Buckets, is the bbolt fill percent a
	// checkpoint sets on the bucket; 0 keeps bbolt's default.
	FillPercent []float64
	// Logger receives the log's operational events. Default: discard.
	Logger *slog.Logger
	// OnFatal is called, once, with the error when a write to the log,
	// its flush (fdatasync) or a checkpoint fails, before any writer
	// whose write the failure may have lost gets its answer. From then on
	// the log refuses every write and read ([ErrFailed]): its overlay may
	// hold writes that are not on disk, and after a failed fdatasync the
	// kernel may have dropped them from its cache too, so only a new
	// process, replaying what is on disk, knows the database. Default:
	// nothing more (the caller, bolt.Open, makes it stop the process).
	OnFatal func(error)
	// Sync replaces the log's flush, for tests that make it fail.
	// Default: fdatasync.
	Sync func(*os.File) error
}

// A Log is the write-ahead log of a bbolt file's hot buckets, its
// in-memory overlay and its group committer. Open it with [Open] on an
// open bbolt file; close it with [Log.Close] before the file.
type Log struct {
	db      *bbolt.DB
	logger  *slog.Logger
	meta    []byte
	buckets [][]byte
	fill    []float64

	mu     sync.RWMutex // guards sending on ops against Close
	closed atomic.Bool
	ops    chan *op
	done   chan struct{} // closed when the committer has exited
	stats  counters

	file    *os.File
	ov      overlay
	onFatal func(error)
	sync    func(*os.File) error // Options.Sync
	// readOnly: opened by OpenReadOnly (no file, no committer).
	readOnly bool
	failed   atomic.Pointer[error]
	// Owned by the committer:
	seed     uint32 // checksum of the log's salt (format.go)
	gen, seq uint64 // the log's live generation; the last record's sequence
	walOff   int64  // where the next record goes
	walSize  int64  // the log file's size
	rec      []byte // the record being written
	w        Tx
}

// Open opens (creating it if needed) the log at path for the bbolt file
// db, copies into db what the last session acknowledged and did not
// checkpoint, and starts the group committer.
func Open(db *bbolt.DB, path string, opts Options) (*Log, error) {
	if len(opts.Buckets) == 0 || len(opts.Buckets) > 255 {
		return nil, fmt.Errorf("write-ahead log: %d hot buckets; want 1 to 255", len(opts.Buckets))
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Log{
		db:      db,
		logger:  opts.Logger,
		meta:    opts.Meta,
		buckets: opts.Buckets,
		fill:    opts.FillPercent,
		ops:     make(chan *op, maxBatch),
		done:    make(chan struct{}),
		ov:      overlay{m: make(map[string]entry)},
		onFatal: opts.OnFatal,
		sync:    opts.Sync,
	}
	l.w.ov, l.w.buckets, l.w.pend = &l.ov, l.buckets, make(map[string]entry)
	if err := l.recover(path); err != nil {
		return nil, err
	}
	go l.commitLoop()
	return l, nil
}

// recover opens the log file at path and copies into the bbolt file the
// writes of the generation after the checkpointed one, in one transaction
// that also marks that generation checkpointed, so that this session's log
// starts at a generation never used before.
func (l *Log) recover(path string) error {
	var ckpt uint64
	err := l.db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(l.meta)
		if v := meta.Get(keyGen); len(v) == 8 {
			ckpt = binary.BigEndian.Uint64(v)
		}
		salt := bytes.Clone(meta.Get(keySalt))
		if salt == nil {
			salt = make([]byte, 16)
			rand.Read(salt)
			if err := meta.Put(keySalt, salt); err != nil {
				return err
			}
		}
		l.seed = walSeed(salt)
		return nil
	})
	if err != nil {
		return err
	}
	f, err := openWAL(path)
	if err != nil {
		return fmt.Errorf("write-ahead log: %w", err)
	}
	fi, err := f.Stat()
	if err == nil {
		var muts []mutation
		muts, _, err = readWAL(f, fi.Size(), l.seed, ckpt+1, len(l.buckets))
		if err == nil {
			err = l.db.Update(func(tx *bbolt.Tx) error {
				for _, m := range muts {
					if err := apply(tx.Bucket(l.buckets[m.bucket]), m.key, m.val, m.del); err != nil {
						return err
					}
				}
				return tx.Bucket(l.meta).Put(keyGen, u64(ckpt+1))
			})
		}
		if err == nil && len(muts) > 0 {
			l.logger.Info("replayed the write-ahead log", "writes", len(muts))
		}
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("replay write-ahead log %s: %w", path, err)
	}
	l.file, l.walSize, l.gen = f, fi.Size(), ckpt+2
	return nil
}

// u64 is v in 8 big-endian bytes.
func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// Close stops the group committer after it has committed every queued
// write and checkpointed them, then closes the log file (not the bbolt
// file). Calls after Close fail with [ErrClosed]; a second Close returns
// nil.
func (l *Log) Close() error {
	if l.readOnly {
		l.closed.Store(true)
		return nil
	}
	l.mu.Lock()
	if l.closed.Load() {
		l.mu.Unlock()
		return nil
	}
	l.closed.Store(true)
	close(l.ops)
	l.mu.Unlock()
	<-l.done
	if err := l.file.Close(); err != nil {
		return fmt.Errorf("close write-ahead log: %w", err)
	}
	return nil
}

// Pending calls fn for every write of bucket b acknowledged since the last
// checkpoint (del for a delete), in no order. The values are fn's to keep
// and never change. It fails with [ErrFailed] once the log has failed.
func (l *Log) Pending(b int, fn func(key []byte, val []byte, del bool)) error {
	if err := l.failure(); err != nil {
		return err
	}
	l.ov.mu.RLock()
	defer l.ov.mu.RUnlock()
	for k, e := range l.ov.m {
		if len(k) > 0 && int(k[0]) == b {
			fn([]byte(k[1:]), e.val, e.del)
		}
	}
	return nil
}

// Bolt is the read transaction under the hot write: for reading the other
// buckets. It is valid until the write returns; never write through it.
func (w *Tx) Bolt() *bbolt.Tx { return w.tx }
