package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// The log on a bbolt file with two hot buckets, written as plain keys and
// values. A crash is simulated by copying the bbolt file and the log while
// they are open and idle: after a write has returned, its record is in the
// log file, and the copies are what a kill -9 at that moment leaves.

var (
	meta    = []byte("meta")
	buckets = [][]byte{[]byte("a"), []byte("b")}
)

const bucketA, bucketB = 0, 1

// openLog opens (creating it) the bbolt file at path and its log at
// path+"-wal"; both close at the end of the test.
func openLog(t *testing.T, path string) *Log {
	t.Helper()
	return openLogWith(t, path, nil)
}

// openLogWith is openLog with set changing the options first.
func openLogWith(t *testing.T, path string, set func(*Options)) *Log {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range append([][]byte{meta}, buckets...) {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Meta: meta, Buckets: buckets, FillPercent: []float64{0, 0.9}}
	if set != nil {
		set(&opts)
	}
	l, err := Open(db, path+"-wal", opts)
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.Close()
		db.Close()
	})
	return l
}

func newLog(t *testing.T) *Log { return openLog(t, filepath.Join(t.TempDir(), "db")) }

// crashCopy copies the log's files to a new directory and returns the
// copy's bbolt path.
func crashCopy(t *testing.T, l *Log) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "crashed")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(l.db.Path() + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func put(t *testing.T, l *Log, b int, key, val string) {
	t.Helper()
	if err := l.Write(t.Context(), "put", func(w *Tx) error { return w.Put(b, []byte(key), []byte(val)) }); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// want checks the value of key in b ("" for none).
func want(t *testing.T, l *Log, b int, key, val string) {
	t.Helper()
	got, err := l.Get(b, []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	if (got == nil) != (val == "") || string(got) != val {
		t.Fatalf("%s = %q; want %q", key, got, val)
	}
}

// records returns the offsets of the log's valid records of its first
// generation, and the offset after the last.
func records(t *testing.T, l *Log) (starts []int64, end int64) {
	t.Helper()
	b, err := os.ReadFile(l.db.Path() + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off+walHeader <= int64(len(b)); {
		n := int64(binary.LittleEndian.Uint32(b[off:]))
		if n == 0 || off+walHeader+n > int64(len(b)) ||
			binary.LittleEndian.Uint64(b[off+8:]) != binary.LittleEndian.Uint64(b[8:]) ||
			crc32.Update(l.seed, crcTable, b[off+8:off+walHeader+n]) != binary.LittleEndian.Uint32(b[off+4:]) {
			break
		}
		starts = append(starts, off)
		off += walHeader + n
		end = off
	}
	return starts, end
}

// TestReplay: writes and deletes that returned are found after a crash,
// although no checkpoint copied them into the bbolt file.
func TestReplay(t *testing.T) {
	l := newLog(t)
	put(t, l, bucketA, "k1", "v1")
	put(t, l, bucketB, "k1", "other bucket")
	put(t, l, bucketA, "k2", "v2")
	put(t, l, bucketA, "k1", "v1 again")
	if err := l.Write(t.Context(), "del", func(w *Tx) error { w.Delete(bucketA, []byte("k2")); return nil }); err != nil {
		t.Fatal(err)
	}
	if l.Stats().Checkpoints != 0 || l.Stats().Ops != 5 {
		t.Fatalf("stats %+v; want 5 writes in the log only", l.Stats())
	}
	c := openLog(t, crashCopy(t, l))
	want(t, c, bucketA, "k1", "v1 again")
	want(t, c, bucketA, "k2", "")
	want(t, c, bucketB, "k1", "other bucket")
	// The replayed log goes on: its own writes survive the next crash.
	put(t, c, bucketA, "k3", "v3")
	want(t, openLog(t, crashCopy(t, c)), bucketA, "k3", "v3")
}

// TestTornTail: a last record that is cut short or damaged was never
// acknowledged; replay stops before it and keeps everything earlier.
func TestTornTail(t *testing.T) {
	l := newLog(t)
	for i := range 4 {
		put(t, l, bucketA, "k", fmt.Sprint("v", i))
	}
	starts, end := records(t, l)
	if len(starts) != 4 {
		t.Fatalf("%d records; want 4", len(starts))
	}
	last := starts[len(starts)-1]
	for name, damage := range map[string]func(b []byte){
		"cut short":   func(b []byte) { clear(b[last+walHeader+3 : end]) },
		"bit flipped": func(b []byte) { b[end-1] ^= 1 },
		"zeroed":      func(b []byte) { clear(b[last:end]) },
		"truncated":   func(b []byte) {},
	} {
		t.Run(name, func(t *testing.T) {
			path := crashCopy(t, l)
			b, err := os.ReadFile(path + "-wal")
			if err != nil {
				t.Fatal(err)
			}
			damage(b)
			if name == "truncated" {
				b = b[:end-2]
			}
			if err := os.WriteFile(path+"-wal", b, 0o600); err != nil {
				t.Fatal(err)
			}
			want(t, openLog(t, path), bucketA, "k", "v2")
		})
	}
}

// TestNoGenerationReuse: every Open uses a new generation, so that a
// record left behind a torn one by a crashed session cannot be read as
// part of a later session's log.
func TestNoGenerationReuse(t *testing.T) {
	l := newLog(t)
	put(t, l, bucketA, "k", "v0")
	put(t, l, bucketA, "k", "v1")
	put(t, l, bucketA, "k", "v2")
	// Crash with the second record torn: the third, behind it, is lost
	// with it.
	path := crashCopy(t, l)
	starts, _ := records(t, l)
	b, err := os.ReadFile(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	b[starts[1]+walHeader] ^= 1
	if err := os.WriteFile(path+"-wal", b, 0o600); err != nil {
		t.Fatal(err)
	}
	c := openLog(t, path)
	want(t, c, bucketA, "k", "v0")
	// The recovered session writes same-sized records again, under a new
	// generation: after its next crash, the old third record does not
	// follow them.
	put(t, c, bucketA, "k", "w1")
	want(t, openLog(t, crashCopy(t, c)), bucketA, "k", "w1")
}

// TestOlderGenerationIgnored: after a checkpoint the log starts over at
// offset 0; the earlier generation's records behind the new ones are
// never replayed.
func TestOlderGenerationIgnored(t *testing.T) {
	l := newLog(t)
	put(t, l, bucketA, "k", "old0")
	put(t, l, bucketA, "j", "old1")
	if err := l.Checkpoint(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(t.Context(), "del", func(w *Tx) error { w.Delete(bucketA, []byte("j")); return nil }); err != nil {
		t.Fatal(err)
	}
	c := openLog(t, crashCopy(t, l))
	want(t, c, bucketA, "j", "")
	want(t, c, bucketA, "k", "old0")
}

// TestKeep: the writes of a failed hot write are discarded, unless its
// error is wrapped with Keep; the caller gets the error either way.
func TestKeep(t *testing.T) {
	l := newLog(t)
	errNo := errors.New("refused")
	err := l.Write(t.Context(), "refuse", func(w *Tx) error {
		w.Put(bucketA, []byte("refused"), []byte("x"))
		return errNo
	})
	if !errors.Is(err, errNo) {
		t.Fatalf("refused write: %v", err)
	}
	err = l.Write(t.Context(), "keep", func(w *Tx) error {
		w.Put(bucketA, []byte("kept"), []byte("x"))
		return Keep(errNo)
	})
	if err != errNo {
		t.Fatalf("kept write: %v; want the unwrapped error", err)
	}
	c := openLog(t, crashCopy(t, l))
	want(t, c, bucketA, "refused", "")
	want(t, c, bucketA, "kept", "x")
}

// TestFailureStopsWrites: once the log cannot be written, every write
// fails with ErrFailed (none is acknowledged that is not on disk), so do
// reads (the overlay may hold the writes that failed), and a reopen
// recovers what was acknowledged.
func TestFailureStopsWrites(t *testing.T) {
	l := newLog(t)
	put(t, l, bucketA, "k", "v")
	path := crashCopy(t, l)
	l.file.Close() // every write to the log now fails
	err := l.Write(t.Context(), "put", func(w *Tx) error { return w.Put(bucketA, []byte("k"), []byte("lost")) })
	if !errors.Is(err, ErrFailed) {
		t.Fatalf("write with a broken log: %v; want ErrFailed", err)
	}
	if err := l.Write(t.Context(), "put", func(w *Tx) error { return w.Put(bucketB, []byte("x"), nil) }); !errors.Is(err, ErrFailed) {
		t.Fatalf("second write with a broken log: %v; want ErrFailed", err)
	}
	if err := l.Checkpoint(t.Context()); !errors.Is(err, ErrFailed) {
		t.Fatalf("checkpoint with a broken log: %v; want ErrFailed", err)
	}
	if _, err := l.Get(bucketA, []byte("k")); !errors.Is(err, ErrFailed) {
		t.Fatalf("read with a broken log: %v; want ErrFailed", err)
	}
	want(t, openLog(t, path), bucketA, "k", "v")
}

// TestFlushFailureIsFatal: a failed fdatasync calls OnFatal once, before
// the writer whose write it may have lost gets an answer; that writer gets
// ErrFailed, never success; and from then on every read and write fails,
// so that nothing this process answers rests on the write that failed. A
// new process knows what is on disk: every acknowledged write.
func TestFlushFailureIsFatal(t *testing.T) {
	errDisk := errors.New("injected EIO")
	var failing atomic.Bool
	fatal := make(chan error, 2)
	release := make(chan struct{})
	l := openLogWith(t, filepath.Join(t.TempDir(), "db"), func(o *Options) {
		o.Sync = func(f *os.File) error {
			if failing.Load() {
				return errDisk
			}
			return fdatasync(f)
		}
		o.OnFatal = func(err error) {
			fatal <- err
			<-release
		}
	})
	put(t, l, bucketA, "k", "acknowledged")
	failing.Store(true)
	done := make(chan error, 1)
	go func() {
		done <- l.Write(t.Context(), "put", func(w *Tx) error { return w.Put(bucketA, []byte("k"), []byte("failed")) })
	}()
	if err := <-fatal; !errors.Is(err, errDisk) {
		t.Fatalf("OnFatal(%v); want the flush's error", err)
	}
	select {
	case err := <-done:
		t.Fatalf("the writer got its answer (%v) while OnFatal ran", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-done; !errors.Is(err, ErrFailed) || !errors.Is(err, errDisk) {
		t.Fatalf("write whose flush failed: %v; want ErrFailed wrapping the flush's error", err)
	}
	if v, err := l.Get(bucketA, []byte("k")); !errors.Is(err, ErrFailed) {
		t.Fatalf("read after a failed flush = %q, %v; want ErrFailed", v, err)
	}
	if err := l.Pending(bucketA, func([]byte, []byte, bool) {}); !errors.Is(err, ErrFailed) {
		t.Fatalf("Pending after a failed flush: %v; want ErrFailed", err)
	}
	if err := l.Write(t.Context(), "put", func(w *Tx) error { return w.Put(bucketB, []byte("x"), nil) }); !errors.Is(err, ErrFailed) {
		t.Fatalf("write after a failed flush: %v; want ErrFailed", err)
	}
	select {
	case err := <-fatal:
		t.Fatalf("OnFatal called again (%v); want once", err)
	default:
	}
	// The failed write may or may not have reached the disk: its writer
	// was told neither way. The acknowledged one is there.
	c := openLog(t, crashCopy(t, l))
	if got, err := c.Get(bucketA, []byte("k")); err != nil || (string(got) != "acknowledged" && string(got) != "failed") {
		t.Fatalf("after a restart, k = %q, %v; want the acknowledged value or the failed one", got, err)
	}
}

// TestVisibleOnlyOnceFlushed: while a write's flush is in flight, a
// reader still sees the value before it (the write may yet fail); once the
// flush has succeeded and the writer has its answer, every reader sees it.
// A later op of the same batch sees it at once.
func TestVisibleOnlyOnceFlushed(t *testing.T) {
	var hold atomic.Bool
	flushing := make(chan struct{}, 1)
	release := make(chan struct{})
	l := openLogWith(t, filepath.Join(t.TempDir(), "db"), func(o *Options) {
		o.Sync = func(f *os.File) error {
			if hold.Load() {
				flushing <- struct{}{}
				<-release
			}
			return fdatasync(f)
		}
	})
	var once sync.Once
	unblock := func() { once.Do(func() { hold.Store(false); close(release) }) }
	t.Cleanup(unblock) // before the log's Close, should the test fail first
	put(t, l, bucketA, "k", "old")
	hold.Store(true)
	done := make(chan error, 1)
	go func() {
		done <- l.Write(t.Context(), "put", func(w *Tx) error {
			if err := w.Put(bucketA, []byte("k"), []byte("new")); err != nil {
				return err
			}
			if got := w.Get(bucketA, []byte("k")); string(got) != "new" {
				return fmt.Errorf("the op's own write reads %q", got)
			}
			return nil
		})
	}()
	<-flushing
	want(t, l, bucketA, "k", "old")
	unblock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want(t, l, bucketA, "k", "new")
}

// TestCheckpointBySize: the log starts over once it passes walCheckpoint,
// and the file stops growing.
func TestCheckpointBySize(t *testing.T) {
	if testing.Short() {
		t.Skip("writes more than walCheckpoint bytes")
	}
	l := newLog(t)
	big := string(make([]byte, 64<<10))
	var n int
	for l.Stats().Checkpoints < 2 {
		put(t, l, bucketB, fmt.Sprint("big", n), big)
		put(t, l, bucketA, "n", fmt.Sprint(n))
		n++
	}
	if l.Stats().CheckpointTime <= 0 {
		t.Errorf("Stats = %+v; want the checkpoints' time counted", l.Stats())
	}
	fi, err := os.Stat(l.db.Path() + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > walCheckpoint+2*walGrow {
		t.Errorf("log file is %d bytes after two checkpoints; want at most %d", fi.Size(), walCheckpoint+2*walGrow)
	}
	c := openLog(t, crashCopy(t, l))
	want(t, c, bucketA, "n", fmt.Sprint(n-1))
	want(t, c, bucketB, "big0", big)
}

// TestClosed: writes after Close fail with ErrClosed; Close twice is nil.
func TestClosed(t *testing.T) {
	l := newLog(t)
	put(t, l, bucketA, "k", "v")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := l.Write(t.Context(), "put", func(w *Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after Close: %v; want ErrClosed", err)
	}
	// Close checkpointed: the bbolt file holds the write on its own.
	err := l.db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(buckets[bucketA]).Get([]byte("k")); string(v) != "v" {
			return fmt.Errorf("k in the file = %q after Close", v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRecordCodec: a record's writes read back as written; a record whose
// checksum matches but names a bucket the log does not have is an error,
// never a torn write.
func TestRecordCodec(t *testing.T) {
	muts := []mutation{{bucket: 1, key: []byte("k"), val: []byte("v")}, {bucket: 0, key: []byte("d"), del: true},
		{bucket: 1, key: []byte("e"), val: []byte{}}}
	rec := appendRecord(nil, walSeed([]byte("salt")), 3, 1, muts)
	got, err := decodeRecord(nil, rec[walHeader:], 2)
	if err != nil || len(got) != 3 || got[0].bucket != 1 || string(got[0].val) != "v" || !got[1].del || got[2].val == nil {
		t.Fatalf("decodeRecord = %+v, %v", got, err)
	}
	if _, err := decodeRecord(nil, rec[walHeader:], 1); !errors.Is(err, errWALRecord) {
		t.Fatalf("decodeRecord with bucket 1 of 1: %v; want errWALRecord", err)
	}
}
