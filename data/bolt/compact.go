package bolt

import (
	"context"
	"errors"
	"fmt"
	"oauthd/data/bolt/internal/wal"
	"os"
	"path/filepath"
	"time"

	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// CompactResult is what [Compact] did.
type CompactResult struct {
	BytesBefore, BytesAfter int64 // the file's size
	// FreePagesBefore is how many free pages the file held: bbolt keeps
	// every one in its in-memory free list (about 60 bytes each, plus
	// transient copies at each commit) for as long as the file is open.
	FreePagesBefore int
}

// compactTxMax bounds the bytes of records copied in one transaction of
// [Compact], which bounds its memory.
const compactTxMax = 64 << 20

// Compact rewrites the database at path without its free pages: a copy
// of every bucket, with full pages, into path+".compact", made durable and
// then renamed over path. Deleted records leave free pages that bbolt
// reuses but never returns, and holds in memory as its free list while
// the file is open; after a mass deletion this gives the memory and the
// disk back. It runs offline: it holds the file's lock throughout and
// fails with [ErrLocked] while a server holds it. The write-ahead log is
// left as it is: its records are keyed by bucket and key, not by page, so
// they apply to the copy as to the original (Open replays them).
func Compact(ctx context.Context, path string, opts Options) (CompactResult, error) {
	var r CompactResult
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if err := checkExists(path); err != nil {
		return r, err
	}
	src, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: opts.Timeout,
		OpenFile: func(name string, flag int, mode os.FileMode) (*os.File, error) {
			return os.OpenFile(name, flag&^os.O_CREATE, mode)
		}})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return r, fmt.Errorf("database %s is in use by another process (stop `oauthd serve` first): %w", path, ErrLocked)
	}
	if err != nil {
		return r, fmt.Errorf("open database %s: %w", path, err)
	}
	defer src.Close()
	err = src.View(func(tx *bbolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if m == nil || m.Get(keySchema) == nil {
			return fmt.Errorf("%s holds no oauthd schema: %w", path, ErrNoDatabase)
		}
		if v := m.Get(keySchema); string(v) != schemaVersion {
			return fmt.Errorf("%w %q (this oauthd compacts %q): start this oauthd's `serve` on it once to upgrade it", ErrSchema, v, schemaVersion)
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	r.FreePagesBefore = src.Stats().FreePageN
	fi, err := os.Stat(path)
	if err != nil {
		return r, err
	}
	r.BytesBefore = fi.Size()
	if err := ctx.Err(); err != nil {
		return r, err
	}

	tmp := path + ".compact"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return r, err
	}
	dst, err := bbolt.Open(tmp, 0o600, &bbolt.Options{Timeout: opts.Timeout})
	if err != nil {
		return r, fmt.Errorf("create %s: %w", tmp, err)
	}
	// Every commit of the copy is fsynced (bbolt's default), the last one
	// included: the copy is on disk before the rename.
	if err := bbolt.Compact(dst, src, compactTxMax); err != nil {
		dst.Close()
		os.Remove(tmp)
		return r, fmt.Errorf("compact %s: %w", path, err)
	}
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return r, fmt.Errorf("compact %s: %w", path, err)
	}
	if err := ctx.Err(); err != nil {
		os.Remove(tmp)
		return r, err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return r, fmt.Errorf("compact %s: %w", path, err)
	}
	if err := wal.SyncDir(filepath.Dir(path)); err != nil {
		return r, fmt.Errorf("compact %s: %w", path, err)
	}
	if fi, err := os.Stat(path); err == nil {
		r.BytesAfter = fi.Size()
	}
	return r, nil
}
