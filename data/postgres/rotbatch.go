package postgres

import (
	"context"
	"sync"
	"time"
)

// rotateBatchSQL is rotateSQL for several families at once: each of the
// arrays' rows ($1 ID, $2 expected version, $3 expiry, $4 successor's
// body) is written if the family is still at that version, and the
// statement returns the ordinal of every row it wrote. Two rows for the
// same family (two racers presenting the same token) join the same target
// row: PostgreSQL updates it once, with one of them, and returns that
// one's ordinal; the other missed, as its own statement after the first
// would have.
const rotateBatchSQL = `UPDATE families f SET version = f.version + 1, expires_ns = v.e, gc_ns = least(f.gc_ns, v.e), body = v.b
	FROM unnest($1::text[], $2::int8[], $3::int8[], $4::text[]::jsonb[]) WITH ORDINALITY AS v(id, ver, e, b, i)
	WHERE f.id = v.id AND f.version = v.ver
	RETURNING v.i`

// rotateInflight bounds the rotation statements of one store in flight at
// once; a rotation that finds them all busy joins the next batch, which
// goes as one statement (rotateBatchSQL) as soon as one of them returns.
// The bound is small so that, under load, rotations share statements (one
// write and one read on the connection, one commit and its WAL flush, for
// all of them) instead of each paying its own; when the store is idle a
// rotation goes at once, alone.
const rotateInflight = 2

// rotateTimeout bounds a batch's statement: it runs for every rotation in
// it, so not on the context of the one that sends it.
const rotateTimeout = 30 * time.Second

// rotBatch is one statement's worth of conditional family writes.
type rotBatch struct {
	ids      []string
	versions []int64
	expiries []int64
	bodies   []string
	won      []bool
	err      error
	turn     chan struct{} // closed when the batch may go (its first member sends it)
	done     chan struct{} // closed when won and err are set
}

func (b *rotBatch) add(id string, version, expiry int64, body []byte) int {
	b.ids = append(b.ids, id)
	b.versions = append(b.versions, version)
	b.expiries = append(b.expiries, expiry)
	b.bodies = append(b.bodies, string(body))
	return len(b.ids) - 1
}

// rotBatcher groups the conditional rotation writes of concurrent
// rotations (group commit): at most rotateInflight statements in flight,
// the rest wait together in one pending batch.
type rotBatcher struct {
	mu       sync.Mutex
	inflight int
	pending  *rotBatch
}

// rotate writes the successor body (expiry) of the family id if the family
// is still at version, as one statement alone or with other rotations'
// writes, and reports whether it wrote. Whatever the batch, the write of
// this family is the one conditional UPDATE of rotateSQL: one statement
// and one round trip (shared), one durable commit, before it returns.
func (s *Store) rotateWrite(ctx context.Context, id string, version, expiry int64, body []byte) (bool, error) {
	r := &s.rot
	r.mu.Lock()
	if r.inflight < rotateInflight && r.pending == nil {
		r.inflight++
		r.mu.Unlock()
		b := &rotBatch{done: make(chan struct{})}
		b.add(id, version, expiry, body)
		s.sendBatch(ctx, b)
		return b.won[0], b.err
	}
	first := r.pending == nil
	if first {
		r.pending = &rotBatch{turn: make(chan struct{}), done: make(chan struct{})}
	}
	b := r.pending
	i := b.add(id, version, expiry, body)
	r.mu.Unlock()
	if first {
		// The batch's sender: it must go even if this caller gives up,
		// since the others wait on it.
		<-b.turn
		s.sendBatch(ctx, b)
	} else {
		select {
		case <-b.done:
		case <-ctx.Done():
			// Whether the write happens is then unknown to the caller,
			// as with any statement cancelled in flight.
			return false, ctx.Err()
		}
	}
	return b.won[i], b.err
}

// sendBatch runs b's statement on a slot of rot's, then passes the slot
// to the pending batch, if any.
func (s *Store) sendBatch(ctx context.Context, b *rotBatch) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rotateTimeout)
	b.won = make([]bool, len(b.ids))
	b.err = retry(ctx, func() error {
		clear(b.won)
		if len(b.ids) == 1 {
			tag, err := s.pool.Exec(ctx, rotateSQL, b.ids[0], b.versions[0], b.expiries[0], b.bodies[0])
			b.won[0] = err == nil && tag.RowsAffected() == 1
			return err
		}
		rows, err := s.pool.Query(ctx, rotateBatchSQL, b.ids, b.versions, b.expiries, b.bodies)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var i int64
			if err := rows.Scan(&i); err != nil {
				return err
			}
			if i >= 1 && int(i) <= len(b.won) {
				b.won[i-1] = true
			}
		}
		return classify(rows.Err())
	})
	cancel()
	close(b.done)
	r := &s.rot
	r.mu.Lock()
	if p := r.pending; p != nil {
		r.pending = nil
		r.mu.Unlock()
		close(p.turn) // the slot passes to p
		return
	}
	r.inflight--
	r.mu.Unlock()
}
