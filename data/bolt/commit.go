package bolt

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

const (
	// maxBatch bounds how many queued writes share one log record.
	maxBatch = 256
	// maxSyncs bounds the batches whose fdatasync may be in flight at
	// once. The disk serves overlapping flushes well, but each costs CPU:
	// two let a new batch start while the last one syncs.
	maxSyncs = 1
	// overlayMax is the number of distinct keys written since the last
	// checkpoint that triggers the next one, whatever the log's size.
	overlayMax = 4096
	// slowSync is the flush time past which the next flush releases its
	// P (Options.SyncHoldsProc): a disk this slow may be stalling, and a
	// held flush would stall the garbage collector with it.
	slowSync = 2 * time.Millisecond
)

// An op is one write submitted to the group committer: a hot write (fn)
// or an exclusive one (excl).
//
// A hot write's fn reads and writes the hot buckets through a [wtx] and
// obeys one rule: when it returns an error its writes are discarded,
// unless the error is wrapped with [keep] (e.g. the deletion of a reused
// refresh-token family), in which case they are committed and the wrapped
// error reported.
//
// An exclusive op runs alone after a checkpoint, on the bbolt file itself:
// the path of the rare calls that scan or sweep the hot buckets.
type op struct {
	ctx      context.Context // the caller's; an op whose ctx is done is not run
	fn       func(w *wtx) error
	excl     func(tx *bbolt.Tx) error
	writable bool // excl runs in a write transaction
	done     chan error
}

// kept is the error of an op whose writes must be committed.
type kept struct{ err error }

func (k *kept) Error() string { return k.err.Error() }
func (k *kept) Unwrap() error { return k.err }

// keep marks err as the result of an op whose writes must still commit.
func keep(err error) error { return &kept{err} }

// panicked carries a panic from a caller's callback back to the caller's
// goroutine, so that it is not the committer that crashes.
type panicked struct{ v any }

func (p *panicked) Error() string { return fmt.Sprint("panic in store callback: ", p.v) }

// submit queues the hot write fn and waits for its result: the error fn
// returned, once the log record holding its writes is on disk.
func (s *Store) submit(ctx context.Context, name string, fn func(w *wtx) error) error {
	o := opPool.Get().(*op)
	o.ctx, o.fn = ctx, fn
	return s.send(ctx, name, o)
}

// exclusive queues fn to run alone on the bbolt file, after a checkpoint,
// in a write transaction when writable (else a read one), and waits for it.
func (s *Store) exclusive(ctx context.Context, name string, writable bool, fn func(tx *bbolt.Tx) error) error {
	o := opPool.Get().(*op)
	o.ctx, o.excl, o.writable = ctx, fn, writable
	return s.send(ctx, name, o)
}

func (s *Store) send(ctx context.Context, name string, o *op) error {
	release := func() {
		o.ctx, o.fn, o.excl, o.writable = nil, nil, nil, false
		opPool.Put(o) // done is empty again: the committer sends exactly once
	}
	if err := ctx.Err(); err != nil {
		release()
		return fmt.Errorf("%s: %w", name, err)
	}
	s.mu.RLock()
	if s.closed.Load() {
		s.mu.RUnlock()
		release()
		return fmt.Errorf("%s: %w", name, ErrClosed)
	}
	s.ops <- o
	s.mu.RUnlock()
	// Wait even if ctx ends now: the op may already be committing, and the
	// caller must learn whether it did.
	err := <-o.done
	release()
	if err == nil {
		return nil
	}
	if p, ok := err.(*panicked); ok {
		panic(p.v)
	}
	return err
}

// opPool recycles ops and their reply channels across calls.
var opPool = sync.Pool{New: func() any { return &op{done: make(chan error, 1)} }}

// A batch is the ops of one log record, on their way to the disk.
type batch struct {
	ops   []*op
	errs  []error
	wrote []bool        // the op's writes are in the record
	sync  bool          // the record is not empty: fdatasync before answering
	prev  chan struct{} // closed when the previous batch is answered
	done  chan struct{} // closed when this one is
	start time.Time
}

var batchPool = sync.Pool{New: func() any {
	return &batch{ops: make([]*op, 0, maxBatch), errs: make([]error, maxBatch), wrote: make([]bool, maxBatch)}
}}

// commitLoop is the group committer, the only writer of the log and the
// overlay. It takes the first queued op (blocking), drains whatever else
// is already queued, runs the hot writes, appends their record to the log
// and hands the batch to a syncer, which answers the ops after the
// fdatasync. Ops that arrive meanwhile form the next batch, which may be
// written and synced while the last one's sync is still in flight (at
// most maxSyncs). Batches are answered in order. It exits, after a last
// checkpoint, when ops is closed and drained.
func (s *Store) commitLoop() {
	defer close(s.done)
	prev := make(chan struct{})
	close(prev)
	var next *op // an exclusive op met while draining: it goes alone, next
	for {
		s.slots <- struct{}{} // a sync slot; the queue grows meanwhile
		first := next
		next = nil
		if first == nil {
			o, ok := <-s.ops
			if !ok {
				<-s.slots
				break
			}
			first = o
		}
		if first.excl != nil {
			<-s.slots
			s.waitSyncs()
			first.done <- result(s.runExclusive(first))
			continue
		}
		b := batchPool.Get().(*batch)
		b.ops = append(b.ops[:0], first)
	drain:
		for len(b.ops) < maxBatch {
			select {
			case o, ok := <-s.ops:
				if !ok {
					break drain
				}
				if o.excl != nil {
					next = o
					break drain
				}
				b.ops = append(b.ops, o)
			default:
				break drain
			}
		}
		b.prev, b.done = prev, make(chan struct{})
		prev = b.done
		s.runBatch(b)
		s.syncq <- b // the syncer releases the slot
		if s.walOff >= walCheckpoint || len(s.ov.m) >= overlayMax {
			s.waitSyncs()
			if err := s.checkpoint(); err != nil {
				s.logger.Error("checkpoint failed", "err", err)
			}
		}
	}
	s.waitSyncs()
	close(s.syncq)
	if err := s.checkpoint(); err != nil {
		s.logger.Error("checkpoint at close failed; the next open replays the write-ahead log", "err", err)
	}
}

// waitSyncs waits until every batch handed to a syncer is answered.
func (s *Store) waitSyncs() {
	for range maxSyncs {
		s.slots <- struct{}{}
	}
	for range maxSyncs {
		<-s.slots
	}
}

// runBatch runs b's hot writes and appends their record to the log.
func (s *Store) runBatch(b *batch) {
	b.start = time.Now()
	b.sync = false
	if err := s.failure(); err != nil {
		for i := range b.ops {
			b.errs[i], b.wrote[i] = err, false
		}
		return
	}
	w := &s.w
	tx, err := s.db.Begin(false)
	if err != nil {
		for i := range b.ops {
			b.errs[i], b.wrote[i] = fmt.Errorf("begin read transaction: %w", err), false
		}
		return
	}
	w.tx, w.muts = tx, w.muts[:0]
	for i, o := range b.ops {
		b.errs[i], b.wrote[i] = s.runOp(w, o)
	}
	tx.Rollback()
	w.tx = nil
	if len(w.muts) == 0 {
		return
	}
	s.seq++
	s.rec = appendRecord(s.rec[:0], s.seed, s.gen, s.seq, w.muts)
	clear(w.muts) // the overlay holds what it needs
	if s.walSize, err = zeroFill(s.wal, s.walSize, s.walOff+int64(len(s.rec))); err != nil {
		s.poison(fmt.Errorf("grow the write-ahead log: %w", err))
	} else if _, err = s.wal.WriteAt(s.rec, s.walOff); err != nil {
		s.poison(fmt.Errorf("write to the write-ahead log: %w", err))
	}
	if err != nil {
		for i := range b.ops {
			if b.wrote[i] {
				b.errs[i] = s.failure()
			}
		}
		return
	}
	s.walOff += int64(len(s.rec))
	b.sync = true
}

// runOp runs one hot write and, unless it failed, applies its writes to
// the overlay and keeps them for the record.
func (s *Store) runOp(w *wtx, o *op) (error, bool) {
	mark := len(w.muts)
	w.mark = mark
	err := run(w, o)
	if _, ok := err.(*kept); err != nil && !ok {
		w.muts = w.muts[:mark]
		return err, false
	}
	if len(w.muts) == mark {
		return err, false
	}
	s.ov.mu.Lock()
	for _, m := range w.muts[mark:] {
		s.ov.m[string(overlayKey(nil, m.bucket, m.key))] = entry{val: m.val, del: m.del}
	}
	s.ov.mu.Unlock()
	return err, true
}

// run runs one op's fn, turning a panic into an error for its caller.
func run(w *wtx, o *op) (err error) {
	if err := o.ctx.Err(); err != nil {
		return err
	}
	defer func() {
		if v := recover(); v != nil {
			err = &panicked{v}
		}
	}()
	return o.fn(w)
}

// syncer makes batches durable and answers their ops, in order.
func (s *Store) syncer() {
	hold := s.hold
	for b := range s.syncq {
		var err error
		if b.sync {
			t := time.Now()
			if hold {
				err = fdatasyncHolding(s.wal)
			} else {
				err = fdatasync(s.wal)
				if s.hold {
					s.stats.releasedSyncs.Add(1)
				}
			}
			d := time.Since(t)
			hold = holdNext(s.hold, d)
			s.stats.syncs.Add(1)
			s.stats.syncNanos.Add(int64(d))
			if err != nil {
				s.poison(fmt.Errorf("fdatasync the write-ahead log: %w", err))
			}
		}
		<-b.prev
		if b.sync {
			// A batch after a failed sync may rest on its writes: it
			// fails too.
			err = s.failure()
		}
		for i, o := range b.ops {
			e := b.errs[i]
			if err != nil && b.wrote[i] {
				e = err
			}
			o.done <- result(e)
		}
		s.stats.commits.Add(1)
		s.stats.ops.Add(uint64(len(b.ops)))
		s.stats.nanos.Add(int64(time.Since(b.start)))
		close(b.done)
		clear(b.ops)
		b.ops, b.prev, b.done = b.ops[:0], nil, nil
		batchPool.Put(b)
		<-s.slots
	}
}

// holdNext reports whether the next flush holds its P
// (Options.SyncHoldsProc): unless the last one took slowSync or more.
func holdNext(enabled bool, last time.Duration) bool {
	return enabled && last < slowSync
}

// result is the error the caller sees: the kept wrapper removed.
func result(err error) error {
	if e, ok := err.(*kept); ok {
		return e.err
	}
	return err
}

// poison records the first failure of the log: from then on every write
// fails (the overlay may hold writes that are not on disk), until a
// restart replays the log.
func (s *Store) poison(err error) {
	if s.failed.CompareAndSwap(nil, &err) {
		s.logger.Error("the store stopped accepting writes; restart oauthd to recover from the write-ahead log", "err", err)
	}
}

// failure is the error that poisoned the store, or nil.
func (s *Store) failure() error {
	if p := s.failed.Load(); p != nil {
		return fmt.Errorf("%w: %w", ErrFailed, *p)
	}
	return nil
}

// checkpoint copies the overlay into the bbolt file in one transaction,
// which also records the log's generation as checkpointed, then empties
// the overlay and starts the log over with the next generation. Only the
// committer calls it, when no sync is in flight.
func (s *Store) checkpoint() error {
	if err := s.failure(); err != nil {
		return err
	}
	if s.walOff == 0 {
		return nil
	}
	start := time.Now()
	keys := make([]string, 0, len(s.ov.m))
	for k := range s.ov.m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // bbolt writes sorted keys faster
	err := s.db.Update(func(tx *bbolt.Tx) error {
		var buckets [numHot]*bbolt.Bucket
		for i, name := range hotNames {
			buckets[i] = tx.Bucket(name)
		}
		buckets[hotFamilies].FillPercent = appendFill
		buckets[hotFamByClient].FillPercent = appendFill
		for _, k := range keys {
			e := s.ov.m[k]
			if err := apply(buckets[k[0]], []byte(k[1:]), e.val, e.del); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keyWALGen, u64(s.gen))
	})
	if err != nil {
		s.poison(fmt.Errorf("checkpoint: %w", err))
		return s.failure()
	}
	s.ov.mu.Lock()
	clear(s.ov.m)
	s.ov.mu.Unlock()
	s.gen++
	s.seq, s.walOff = 0, 0
	s.stats.checkpoints.Add(1)
	s.stats.checkpointNanos.Add(int64(time.Since(start)))
	return nil
}

// Checkpoint copies every write acknowledged so far from the write-ahead
// log into the bbolt file (which then holds the whole database on its own)
// and starts the log over. The store does it by itself as the log grows,
// and on Close.
func (s *Store) Checkpoint(ctx context.Context) error {
	return s.exclusive(ctx, "checkpoint", false, func(*bbolt.Tx) error { return nil })
}

// runExclusive runs an exclusive op: a checkpoint, so that the bbolt file
// holds every write, then the op's function on it.
func (s *Store) runExclusive(o *op) (err error) {
	if err := o.ctx.Err(); err != nil {
		return err
	}
	if err := s.checkpoint(); err != nil {
		return err
	}
	defer func() {
		if v := recover(); v != nil {
			err = &panicked{v}
		}
	}()
	if o.writable {
		return s.db.Update(o.excl)
	}
	return s.db.View(o.excl)
}

// The overlay holds the latest write of every hot key written since the
// last checkpoint; a delete is kept as a tombstone. Its values are never
// changed in place.
type overlay struct {
	mu sync.RWMutex // the committer writes under it; others read under it
	m  map[string]entry
}

type entry struct {
	val []byte
	del bool
}

// overlayKey appends to dst the overlay's key of key in bucket b.
func overlayKey(dst []byte, b hotBucket, key []byte) []byte {
	return append(append(dst, byte(b)), key...)
}

// apply writes one put (or, when del, delete) to a bbolt bucket.
func apply(b *bbolt.Bucket, key, val []byte, del bool) error {
	if del {
		return b.Delete(key)
	}
	return b.Put(key, val)
}

// hotGet returns the current value of key in the hot bucket b (nil when
// there is none), for a reader outside the committer. The value is the
// caller's: a copy.
func (s *Store) hotGet(b hotBucket, key []byte) ([]byte, error) {
	var buf [80]byte
	k := overlayKey(buf[:0], b, key)
	s.ov.mu.RLock()
	e, ok := s.ov.m[string(k)]
	s.ov.mu.RUnlock()
	if ok {
		if e.del {
			return nil, nil
		}
		return e.val, nil // never changed in place
	}
	var out []byte
	err := s.db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(hotNames[b]).Get(key); v != nil {
			out = bytes.Clone(v)
		}
		return nil
	})
	return out, err
}

// A wtx is what a hot write sees: the overlay over a read transaction of
// the bbolt file, and the writes of the op so far.
type wtx struct {
	tx   *bbolt.Tx
	ov   *overlay
	muts []mutation // the batch's writes; the current op's from mark on
	mark int
}

// get returns the value of key in b, or nil. It is valid until the op
// returns.
func (w *wtx) get(b hotBucket, key []byte) []byte {
	for i := len(w.muts) - 1; i >= w.mark; i-- {
		if m := &w.muts[i]; m.bucket == b && bytes.Equal(m.key, key) {
			return m.val
		}
	}
	var buf [80]byte
	if e, ok := w.ov.m[string(overlayKey(buf[:0], b, key))]; ok {
		return e.val
	}
	return w.tx.Bucket(hotNames[b]).Get(key)
}

// put writes val under key in b. Neither may change afterwards. It fails,
// writing nothing, where bbolt would refuse the key or value.
func (w *wtx) put(b hotBucket, key, val []byte) error {
	switch {
	case len(key) == 0:
		return bolterrors.ErrKeyRequired
	case len(key) > bbolt.MaxKeySize:
		return bolterrors.ErrKeyTooLarge
	case len(val) > bbolt.MaxValueSize:
		return bolterrors.ErrValueTooLarge
	}
	if val == nil {
		val = []byte{}
	}
	w.muts = append(w.muts, mutation{bucket: b, key: key, val: val})
	return nil
}

// del deletes key from b.
func (w *wtx) del(b hotBucket, key []byte) {
	w.muts = append(w.muts, mutation{bucket: b, key: key, del: true})
}

// commitStats counts the group committer's work, for metrics.
type commitStats struct {
	commits, ops, checkpoints, syncs, releasedSyncs atomic.Uint64
	nanos, syncNanos, checkpointNanos               atomic.Int64
}

// CommitStats is what the group committer has done since Open.
type CommitStats struct {
	Commits        uint64        // batches answered
	Ops            uint64        // writes they carried
	Time           time.Duration // from a batch's start to its answer, fsync included
	Checkpoints    uint64        // copies of the log into the bbolt file
	CheckpointTime time.Duration // spent in them (no write is answered meanwhile)
	Syncs          uint64        // fdatasyncs of the log
	SyncTime       time.Duration // spent in them
	// ReleasedSyncs counts the fdatasyncs that released their P because
	// the one before was slow (Options.SyncHoldsProc); 0 when it is off.
	ReleasedSyncs uint64
}

// CommitStats reports the group committer's counters: Ops/Commits is the
// mean batch size, Time/Commits the mean commit latency.
func (s *Store) CommitStats() CommitStats {
	return CommitStats{
		Commits:        s.stats.commits.Load(),
		Ops:            s.stats.ops.Load(),
		Time:           time.Duration(s.stats.nanos.Load()),
		Checkpoints:    s.stats.checkpoints.Load(),
		CheckpointTime: time.Duration(s.stats.checkpointNanos.Load()),
		Syncs:          s.stats.syncs.Load(),
		SyncTime:       time.Duration(s.stats.syncNanos.Load()),
		ReleasedSyncs:  s.stats.releasedSyncs.Load(),
	}
}
