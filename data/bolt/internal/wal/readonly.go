package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"

	bbolt "go.etcd.io/bbolt"
)

// ErrReadOnly: a write to a log opened with [OpenReadOnly], or a read
// that needs the bbolt file to hold every write (an exclusive read) while
// the log holds writes not yet copied into it.
var ErrReadOnly = errors.New("bolt store is open read-only")

// OpenReadOnly opens the log at path of the bbolt file db (which may be
// opened read-only) for reading only: it loads into the overlay the writes
// the last session acknowledged and did not checkpoint, writing nothing,
// to the log or to db, and starts no committer. [Log.Get] and
// [Log.Pending] then see every acknowledged write; [Log.Write] fails with
// [ErrReadOnly], and so does [Log.Exclusive] unless it only reads and the
// log holds no such write.
func OpenReadOnly(db *bbolt.DB, path string, opts Options) (*Log, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Log{db: db, logger: opts.Logger, meta: opts.Meta, buckets: opts.Buckets, fill: opts.FillPercent,
		done: make(chan struct{}), ov: overlay{m: make(map[string]entry)}, readOnly: true}
	close(l.done)
	var (
		ckpt uint64
		salt []byte
	)
	if err := db.View(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(l.meta)
		if v := meta.Get(keyGen); len(v) == 8 {
			ckpt = binary.BigEndian.Uint64(v)
		}
		salt = bytes.Clone(meta.Get(keySalt))
		return nil
	}); err != nil {
		return nil, err
	}
	if salt == nil {
		return l, nil // no session ever wrote a log for this file
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("write-ahead log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("write-ahead log: %w", err)
	}
	muts, _, err := readWAL(f, fi.Size(), walSeed(salt), ckpt+1, len(l.buckets))
	if err != nil {
		return nil, fmt.Errorf("read write-ahead log %s: %w", path, err)
	}
	for _, m := range muts {
		l.ov.m[string(overlayKey(nil, m.bucket, m.key))] = entry{val: m.val, del: m.del}
	}
	return l, nil
}

// readOnlyOp answers a Write or Exclusive on a read-only log.
func (l *Log) readOnlyOp(name string, writable bool, fn func(tx *bbolt.Tx) error) error {
	if l.closed.Load() {
		return fmt.Errorf("%s: %w", name, ErrClosed)
	}
	l.ov.mu.RLock()
	pending := len(l.ov.m)
	l.ov.mu.RUnlock()
	if writable || fn == nil {
		return fmt.Errorf("%s: %w", name, ErrReadOnly)
	}
	if pending > 0 {
		return fmt.Errorf("%s: %w: its write-ahead log holds %d writes not yet copied into the file (a server stopped without closing it); start and stop `oauthd serve` on it once, then try again",
			name, ErrReadOnly, pending)
	}
	return l.db.View(fn)
}
