package wal

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
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

const (
	// maxBatch bounds how many queued writes share one log record.
	maxBatch = 256
	// overlayMax is the number of distinct keys written since the last
	// checkpoint that triggers the next one, whatever the log's size.
	overlayMax = 4096
)

// An op is one write submitted to the group committer: a hot write (fn)
// or an exclusive one (excl).
//
// A hot write's fn reads and writes the hot buckets through a [Tx] and
// obeys one rule: when it returns an error its writes are discarded,
// unless the error is wrapped with [Keep] (e.g. the deletion of a reused
// refresh-token family), in which case they are committed and the wrapped
// error reported.
//
// An exclusive op runs alone after a checkpoint, on the bbolt file itself:
// the path of the rare calls that scan or sweep the hot buckets.
type op struct {
	ctx      context.Context // the caller's; an op whose ctx is done is not run
	fn       func(w *Tx) error
	excl     func(tx *bbolt.Tx) error
	writable bool // excl runs in a write transaction
	done     chan error
}

// kept is the error of an op whose writes must be committed.
type kept struct{ err error }

func (k *kept) Error() string { return k.err.Error() }
func (k *kept) Unwrap() error { return k.err }

// Keep marks err as the result of an op whose writes must still commit.
func Keep(err error) error { return &kept{err} }

// panicked carries a panic from a caller's callback back to the caller's
// goroutine, so that it is not the committer that crashes.
type panicked struct{ v any }

func (p *panicked) Error() string { return fmt.Sprint("panic in store callback: ", p.v) }

// Write queues the hot write fn and waits for its result: the error fn
// returned, once the log record holding its writes is on disk.
func (l *Log) Write(ctx context.Context, name string, fn func(w *Tx) error) error {
	if l.readOnly {
		return l.readOnlyOp(name, true, nil)
	}
	o := opPool.Get().(*op)
	o.ctx, o.fn = ctx, fn
	return l.send(ctx, name, o)
}

// Exclusive queues fn to run alone on the bbolt file, after a checkpoint,
// in a write transaction when writable (else a read one), and waits for it.
func (l *Log) Exclusive(ctx context.Context, name string, writable bool, fn func(tx *bbolt.Tx) error) error {
	if l.readOnly {
		return l.readOnlyOp(name, writable, fn)
	}
	o := opPool.Get().(*op)
	o.ctx, o.excl, o.writable = ctx, fn, writable
	return l.send(ctx, name, o)
}

func (l *Log) send(ctx context.Context, name string, o *op) error {
	release := func() {
		o.ctx, o.fn, o.excl, o.writable = nil, nil, nil, false
		opPool.Put(o) // done is empty again: the committer sends exactly once
	}
	if err := ctx.Err(); err != nil {
		release()
		return fmt.Errorf("%s: %w", name, err)
	}
	l.mu.RLock()
	if l.closed.Load() {
		l.mu.RUnlock()
		release()
		return fmt.Errorf("%s: %w", name, ErrClosed)
	}
	l.ops <- o
	l.mu.RUnlock()
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
	wrote []bool // the op's writes are in the record
	sync  bool   // the record is not empty: fdatasync before answering
	start time.Time
	// written: when the record was in the file (before its fsync).
	written time.Time
}

var batchPool = sync.Pool{New: func() any {
	return &batch{ops: make([]*op, 0, maxBatch), errs: make([]error, maxBatch), wrote: make([]bool, maxBatch)}
}}

// commitLoop is the group committer, the only writer of the log and the
// overlay. It takes the first queued op (blocking), drains whatever else
// is already queued, runs the hot writes, appends their record to the
// log, makes it durable and answers the ops (commit); ops that arrive
// meanwhile form the next batch. One batch at a time: a second sync in
// flight gave smaller batches and more sync CPU for no throughput. It
// exits, after a last checkpoint, when ops is closed and drained.
func (l *Log) commitLoop() {
	defer close(l.done)
	var next *op // an exclusive op met while draining: it goes alone, next
	for {
		first := next
		next = nil
		if first == nil {
			o, ok := <-l.ops
			if !ok {
				break
			}
			first = o
		}
		if first.excl != nil {
			first.done <- result(l.runExclusive(first))
			continue
		}
		b := batchPool.Get().(*batch)
		b.ops = append(b.ops[:0], first)
	drain:
		for len(b.ops) < maxBatch {
			select {
			case o, ok := <-l.ops:
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
		l.runBatch(b)
		l.commit(b)
		if l.walOff >= walCheckpoint || len(l.ov.m) >= overlayMax {
			if err := l.checkpoint(); err != nil {
				l.logger.Error("checkpoint failed", "err", err)
			}
		}
	}
	if err := l.checkpoint(); err != nil {
		l.logger.Error("checkpoint at close failed; the next open replays the write-ahead log", "err", err)
	}
}

// runBatch runs b's hot writes and appends their record to the log.
func (l *Log) runBatch(b *batch) {
	b.start = time.Now()
	b.sync = false
	if err := l.failure(); err != nil {
		for i := range b.ops {
			b.errs[i], b.wrote[i] = err, false
		}
		return
	}
	w := &l.w
	tx, err := l.db.Begin(false)
	if err != nil {
		for i := range b.ops {
			b.errs[i], b.wrote[i] = fmt.Errorf("begin read transaction: %w", err), false
		}
		return
	}
	w.tx, w.muts = tx, w.muts[:0]
	for i, o := range b.ops {
		b.errs[i], b.wrote[i] = l.runOp(w, o)
	}
	tx.Rollback()
	w.tx = nil
	if len(w.muts) == 0 {
		return
	}
	l.seq++
	l.rec = appendRecord(l.rec[:0], l.seed, l.gen, l.seq, w.muts)
	clear(w.muts) // the overlay holds what it needs
	if l.walSize, err = zeroFill(l.file, l.walSize, l.walOff+int64(len(l.rec))); err != nil {
		l.poison(fmt.Errorf("grow the write-ahead log: %w", err))
	} else if _, err = l.file.WriteAt(l.rec, l.walOff); err != nil {
		l.poison(fmt.Errorf("write to the write-ahead log: %w", err))
	}
	if err != nil {
		for i := range b.ops {
			if b.wrote[i] {
				b.errs[i] = l.failure()
			}
		}
		return
	}
	l.walOff += int64(len(l.rec))
	b.sync = true
	b.written = time.Now()
}

// runOp runs one hot write and, unless it failed, applies its writes to
// the overlay and keeps them for the record.
func (l *Log) runOp(w *Tx, o *op) (error, bool) {
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
	for _, m := range w.muts[mark:] {
		w.pend[string(overlayKey(nil, m.bucket, m.key))] = entry{val: m.val, del: m.del}
	}
	return err, true
}

// run runs one op's fn, turning a panic into an error for its caller.
func run(w *Tx, o *op) (err error) {
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

// commit makes b's record durable, then publishes its writes to the
// overlay (so a reader sees a write only once its flush succeeded) and
// answers its ops. After a failed flush the writes are dropped: the log is
// poisoned, and every reader and writer from then on gets ErrFailed.
func (l *Log) commit(b *batch) {
	var err error
	var t time.Time     // when the flush started
	var d time.Duration // how long it took
	if b.sync {
		t = time.Now()
		if l.sync != nil {
			err = l.sync(l.file)
		} else {
			err = fdatasync(l.file)
		}
		d = time.Since(t)
		l.stats.syncs.Add(1)
		l.stats.syncNanos.Add(int64(d))
		if err != nil {
			l.poison(fmt.Errorf("fdatasync the write-ahead log: %w", err))
		}
		err = l.failure()
	}
	if l.failure() == nil && len(l.w.pend) > 0 {
		l.ov.mu.Lock()
		for k, e := range l.w.pend {
			l.ov.m[k] = e
		}
		l.ov.mu.Unlock()
	}
	clear(l.w.pend)
	// The counters first: a writer that has its answer sees its write in
	// Stats.
	l.stats.commits.Add(1)
	l.stats.ops.Add(uint64(len(b.ops)))
	l.stats.nanos.Add(int64(time.Since(b.start)))
	for i, o := range b.ops {
		e := b.errs[i]
		if err != nil && b.wrote[i] {
			e = err
		}
		if b.wrote[i] && b.sync {
			traceFlush(o.ctx, b, t, d, len(b.ops))
		}
		o.done <- result(e)
	}
	clear(b.ops)
	b.ops = b.ops[:0]
	batchPool.Put(b)
}

// result is the error the caller sees: the kept wrapper removed.
func result(err error) error {
	if e, ok := err.(*kept); ok {
		return e.err
	}
	return err
}

// poison records the first failure of the log: from then on every write
// and read fails (the overlay may hold writes that never reached a
// checkpoint), until
// a restart replays the log; and it calls Options.OnFatal. The committer
// calls it before it answers the writers of the batch.
func (l *Log) poison(err error) {
	if l.failed.CompareAndSwap(nil, &err) {
		l.logger.Error("the store failed and accepts no more writes or reads; restart oauthd to recover from the write-ahead log", "err", err)
		if l.onFatal != nil {
			l.onFatal(err)
		}
	}
}

// failure is the error that poisoned the store, or nil.
func (l *Log) failure() error {
	if p := l.failed.Load(); p != nil {
		return fmt.Errorf("%w: %w", ErrFailed, *p)
	}
	return nil
}

// checkpoint copies the overlay into the bbolt file in one transaction,
// which also records the log's generation as checkpointed, then empties
// the overlay and starts the log over with the next generation. Only the
// committer calls it, when no sync is in flight.
func (l *Log) checkpoint() error {
	if err := l.failure(); err != nil {
		return err
	}
	if l.walOff == 0 {
		return nil
	}
	start := time.Now()
	keys := make([]string, 0, len(l.ov.m))
	for k := range l.ov.m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // bbolt writes sorted keys faster
	err := l.db.Update(func(tx *bbolt.Tx) error {
		buckets := make([]*bbolt.Bucket, len(l.buckets))
		for i, name := range l.buckets {
			buckets[i] = tx.Bucket(name)
			if i < len(l.fill) && l.fill[i] > 0 {
				buckets[i].FillPercent = l.fill[i]
			}
		}
		for _, k := range keys {
			e := l.ov.m[k]
			if err := apply(buckets[k[0]], []byte(k[1:]), e.val, e.del); err != nil {
				return err
			}
		}
		return tx.Bucket(l.meta).Put(keyGen, u64(l.gen))
	})
	if err != nil {
		l.poison(fmt.Errorf("checkpoint: %w", err))
		return l.failure()
	}
	l.ov.mu.Lock()
	clear(l.ov.m)
	l.ov.mu.Unlock()
	l.gen++
	l.seq, l.walOff = 0, 0
	l.stats.checkpoints.Add(1)
	l.stats.checkpointNanos.Add(int64(time.Since(start)))
	return nil
}

// Checkpoint copies every write acknowledged so far from the log into the
// bbolt file (which then holds the whole database on its own) and starts
// the log over. The log does it by itself as it grows, and on Close.
func (l *Log) Checkpoint(ctx context.Context) error {
	return l.Exclusive(ctx, "checkpoint", false, func(*bbolt.Tx) error { return nil })
}

// runExclusive runs an exclusive op: a checkpoint, so that the bbolt file
// holds every write, then the op's function on it.
func (l *Log) runExclusive(o *op) (err error) {
	if err := o.ctx.Err(); err != nil {
		return err
	}
	if err := l.checkpoint(); err != nil {
		return err
	}
	defer func() {
		if v := recover(); v != nil {
			err = &panicked{v}
		}
	}()
	if o.writable {
		return l.db.Update(o.excl)
	}
	return l.db.View(o.excl)
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
func overlayKey(dst []byte, b int, key []byte) []byte {
	return append(append(dst, byte(b)), key...)
}

// apply writes one put (or, when del, delete) to a bbolt bucket.
func apply(b *bbolt.Bucket, key, val []byte, del bool) error {
	if del {
		return b.Delete(key)
	}
	return b.Put(key, val)
}

// Get returns the current value of key in bucket b (its index in
// Options.Buckets), nil when there is none, for a reader outside the
// committer. The value is the caller's: a copy. It fails with [ErrFailed]
// once the log has failed.
func (l *Log) Get(b int, key []byte) ([]byte, error) {
	if err := l.failure(); err != nil {
		return nil, err
	}
	var buf [80]byte
	k := overlayKey(buf[:0], b, key)
	l.ov.mu.RLock()
	e, ok := l.ov.m[string(k)]
	l.ov.mu.RUnlock()
	if ok {
		if e.del {
			return nil, nil
		}
		return e.val, nil // never changed in place
	}
	var out []byte
	err := l.db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(l.buckets[b]).Get(key); v != nil {
			out = bytes.Clone(v)
		}
		return nil
	})
	return out, err
}

// A Tx is what a hot write sees: the overlay over a read transaction of
// the bbolt file, and the writes of the op so far.
type Tx struct {
	tx      *bbolt.Tx
	buckets [][]byte
	ov      *overlay
	pend    map[string]entry // the batch's writes until its flush: what its later ops see, no reader
	muts    []mutation       // the batch's writes; the current op's from mark on
	mark    int
}

// get returns the value of key in b, or nil. It is valid until the op
// returns.
func (w *Tx) Get(b int, key []byte) []byte {
	for i := len(w.muts) - 1; i >= w.mark; i-- {
		if m := &w.muts[i]; m.bucket == b && bytes.Equal(m.key, key) {
			return m.val
		}
	}
	var buf [80]byte
	k := overlayKey(buf[:0], b, key)
	if e, ok := w.pend[string(k)]; ok {
		return e.val
	}
	if e, ok := w.ov.m[string(k)]; ok {
		return e.val
	}
	return w.tx.Bucket(w.buckets[b]).Get(key)
}

// put writes val under key in b. Neither may change afterwards. It fails,
// writing nothing, where bbolt would refuse the key or value.
func (w *Tx) Put(b int, key, val []byte) error {
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
func (w *Tx) Delete(b int, key []byte) {
	w.muts = append(w.muts, mutation{bucket: b, key: key, del: true})
}

// counters count the group committer's work, for metrics.
type counters struct {
	commits, ops, checkpoints, syncs  atomic.Uint64
	nanos, syncNanos, checkpointNanos atomic.Int64
}

// Stats is what the group committer has done since Open.
type Stats struct {
	Commits        uint64        // batches answered
	Ops            uint64        // writes they carried
	Time           time.Duration // from a batch's start to its answer, fsync included
	Checkpoints    uint64        // copies of the log into the bbolt file
	CheckpointTime time.Duration // spent in them (no write is answered meanwhile)
	Syncs          uint64        // fdatasyncs of the log
	SyncTime       time.Duration // spent in them
}

// Stats reports the group committer's counters: Ops/Commits is the mean
// batch size, Time/Commits the mean commit latency.
func (l *Log) Stats() Stats {
	return Stats{
		Commits:        l.stats.commits.Load(),
		Ops:            l.stats.ops.Load(),
		Time:           time.Duration(l.stats.nanos.Load()),
		Checkpoints:    l.stats.checkpoints.Load(),
		CheckpointTime: time.Duration(l.stats.checkpointNanos.Load()),
		Syncs:          l.stats.syncs.Load(),
		SyncTime:       time.Duration(l.stats.syncNanos.Load()),
	}
}

// tracer names the log's spans, children of the store operation's.
var tracer = otel.Tracer("oauthd/data/bolt")

// traceFlush records, under the span of an op whose writes are in batch b
// (when that span is recording), how its record was made durable: "bolt
// wal write", from the batch's start to its record in the file, and "bolt
// wal fsync", the fdatasync that began at sync and took d. ops is the
// batch's size: the ops that shared this write and fsync.
func traceFlush(ctx context.Context, b *batch, sync time.Time, d time.Duration, ops int) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return
	}
	n := attribute.Int("oauthd.batch_ops", ops)
	_, w := tracer.Start(ctx, "bolt wal write", trace.WithTimestamp(b.start), trace.WithAttributes(n))
	w.End(trace.WithTimestamp(b.written))
	_, f := tracer.Start(ctx, "bolt wal fsync", trace.WithTimestamp(sync), trace.WithAttributes(n))
	f.End(trace.WithTimestamp(sync.Add(d)))
}
