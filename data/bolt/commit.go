package bolt

import (
	"context"
	"fmt"
	"sync"

	bbolt "go.etcd.io/bbolt"
)

// maxBatch bounds how many queued writes share one transaction.
const maxBatch = 256

// An op is one hot-path write submitted to the group committer. Its fn runs
// inside a write transaction shared with other ops and obeys one rule: when
// it returns an error it has written nothing, so the transaction can commit
// for the others. Two kinds of error break that rule on purpose:
//   - [keep]: the op wrote (e.g. deleted a reused family); commit, then
//     report the wrapped error to the caller;
//   - [abort]: a write failed half-way; the whole batch is rolled back and
//     every op is retried alone.
type op struct {
	ctx  context.Context // the caller's; an op whose ctx is done is not run
	fn   func(tx *bbolt.Tx) error
	done chan error
}

// kept is the error of an op whose writes must be committed.
type kept struct{ err error }

func (k *kept) Error() string { return k.err.Error() }
func (k *kept) Unwrap() error { return k.err }

// keep marks err as the result of an op whose writes must still commit.
func keep(err error) error { return &kept{err} }

// aborted is a write failure inside a shared transaction.
type aborted struct{ err error }

func (a *aborted) Error() string { return a.err.Error() }
func (a *aborted) Unwrap() error { return a.err }

// abort marks err (a failed Put or Delete) as fatal to the transaction.
func abort(err error) error {
	if err == nil {
		return nil
	}
	return &aborted{err}
}

// panicked carries a panic from a caller's callback back to the caller's
// goroutine, so that it is not the committer that crashes.
type panicked struct{ v any }

func (p *panicked) Error() string { return fmt.Sprint("panic in store callback: ", p.v) }

// submit queues fn for the group committer and waits for its result: the
// error fn returned, once the transaction it ran in has committed.
func (s *Store) submit(ctx context.Context, name string, fn func(tx *bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	o := opPool.Get().(*op)
	o.ctx, o.fn = ctx, fn
	s.mu.RLock()
	if s.closed.Load() {
		s.mu.RUnlock()
		o.ctx, o.fn = nil, nil
		opPool.Put(o)
		return fmt.Errorf("%s: %w", name, ErrClosed)
	}
	s.ops <- o
	s.mu.RUnlock()
	// Wait even if ctx ends now: the op may already be committing, and the
	// caller must learn whether it did.
	err := <-o.done
	o.ctx, o.fn = nil, nil
	opPool.Put(o) // done is empty again: the committer sends exactly once
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

// commitLoop is the group committer: it takes the first queued op (blocking),
// drains whatever else is already queued, runs them all in one transaction
// and answers each after the commit. Ops that arrive during the fsync form
// the next batch. It exits when ops is closed and drained.
func (s *Store) commitLoop() {
	defer close(s.done)
	batch := make([]*op, 0, maxBatch)
	errs := make([]error, maxBatch)
	for {
		first, ok := <-s.ops
		if !ok {
			return
		}
		batch = append(batch[:0], first)
	drain:
		for len(batch) < maxBatch {
			select {
			case o, ok := <-s.ops:
				if !ok {
					break drain
				}
				batch = append(batch, o)
			default:
				break drain
			}
		}
		s.runBatch(batch, errs[:len(batch)])
		clear(batch) // drop references to the callers' closures
	}
}

// runBatch runs batch in one transaction and answers every op.
func (s *Store) runBatch(batch []*op, errs []error) {
	err := s.db.Update(func(tx *bbolt.Tx) error {
		for i, o := range batch {
			errs[i] = run(tx, o)
			if a, ok := errs[i].(*aborted); ok {
				return a
			}
		}
		return nil
	})
	if err == nil {
		for i, o := range batch {
			o.done <- result(errs[i])
		}
		return
	}
	// The transaction failed as a whole (I/O, or one op's write failed):
	// nothing of it is on disk. Retry each op alone so that each gets its
	// own result.
	s.logger.Error("group commit failed; retrying its writes one by one", "ops", len(batch), "err", err)
	for _, o := range batch {
		o.done <- s.runAlone(o)
	}
}

// runAlone runs one op in its own transaction.
func (s *Store) runAlone(o *op) error {
	var res error
	err := s.db.Update(func(tx *bbolt.Tx) error {
		res = run(tx, o)
		if _, ok := res.(*kept); res == nil || ok {
			return nil
		}
		return res // roll back whatever a failed op may have written
	})
	if err != nil {
		return result(err)
	}
	return result(res)
}

// run runs one op's fn, turning a panic into an error for its caller.
func run(tx *bbolt.Tx, o *op) (err error) {
	if err := o.ctx.Err(); err != nil {
		return err
	}
	defer func() {
		if v := recover(); v != nil {
			err = &panicked{v}
		}
	}()
	return o.fn(tx)
}

// result is the error the caller sees: kept and aborted wrappers removed.
func result(err error) error {
	switch e := err.(type) {
	case *kept:
		return e.err
	case *aborted:
		return e.err
	}
	return err
}
