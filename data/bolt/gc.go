package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"oauthd/data"
)

// sweepBatch is how many expiry-index entries one transaction of the
// sweep visits at most. A batch (its checkpoint, its deletes and two
// commits) is the longest the sweep holds the hot writes back: 36 ms on
// average at 1 M families on a loaded 2-core machine (docs/PERFORMANCE.md).
const sweepBatch = 1000

// errUnchanged rolls back a sweep batch that found nothing to write (no
// commit, no fsync).
var errUnchanged = errors.New("nothing to sweep")

// GarbageCollect implements [data.Store.GarbageCollect]. It walks the
// expiry index (expiry.go) up to now, in batches: each batch is an
// exclusive op (after a checkpoint, on the bbolt file) of at most
// s.sweepBatch entries, and after each the sweep waits as long as the
// batch took, so the hot writes have the committer at least half the
// time. A sweep that finds nothing costs one short read of the index,
// whatever the number of records.
func (s *Store) GarbageCollect(ctx context.Context, now time.Time) (data.GCResult, error) {
	var total data.GCResult
	n, err := s.sweepDevices(ctx, now)
	if err != nil {
		return data.GCResult{}, fmt.Errorf("garbage collect: %w", err)
	}
	total.DeviceCodes = n
	limit := s.sweepBatch
	if limit <= 0 {
		limit = sweepBatch
	}
	end := binary.BigEndian.AppendUint64(nil, expiryTime(now))
	for {
		var r data.GCResult
		var visited int
		start := time.Now()
		err := s.exclusive(ctx, "garbage collect", true, func(tx *bbolt.Tx) error {
			r, visited = data.GCResult{}, 0
			var err error
			visited, err = sweepBatchTx(tx, end, limit, now, &r)
			if err == nil && visited == 0 {
				return errUnchanged
			}
			return err
		})
		if err != nil && !errors.Is(err, errUnchanged) {
			return data.GCResult{}, fmt.Errorf("garbage collect: %w", err)
		}
		total.AuthCodes += r.AuthCodes
		total.Families += r.Families
		total.Sessions += r.Sessions
		total.Revocations += r.Revocations
		total.Nonces += r.Nonces
		if visited < limit {
			return total, nil
		}
		if s.afterBatch != nil {
			s.afterBatch()
		}
		pause := time.NewTimer(time.Since(start))
		select {
		case <-ctx.Done():
			pause.Stop()
			return data.GCResult{}, fmt.Errorf("garbage collect: %w", ctx.Err())
		case <-pause.C:
		}
	}
}

// sweepBatchTx visits at most limit entries of the expiry index before
// end (the index time of now), the earliest first: it deletes each entry,
// and the record it names if that expired before now (counted in r); it
// puts a record still alive back at its expiry, which is not before now.
// So every entry visited leaves the range, and the next batch goes on
// where this one stopped.
func sweepBatchTx(tx *bbolt.Tx, end []byte, limit int, now time.Time, r *data.GCResult) (int, error) {
	idx := tx.Bucket(bucketExpiry)
	var due [][]byte
	c := idx.Cursor()
	for k, _ := c.First(); k != nil && len(due) < limit && bytes.Compare(k, end) < 0; k, _ = c.Next() {
		due = append(due, bytes.Clone(k))
	}
	put := boltPut(tx)
	for _, k := range due {
		if err := idx.Delete(k); err != nil {
			return 0, err
		}
		if len(k) < 9 || int(k[8]) >= len(hotBuckets) {
			continue // not an entry this build writes: dropped
		}
		b, key := int(k[8]), k[9:]
		bucket := tx.Bucket(hotBuckets[b])
		raw := bucket.Get(key)
		if raw == nil {
			continue // the record was deleted: its entry went stale
		}
		at, err := expiryOf(b, raw)
		if err != nil {
			return 0, fmt.Errorf("%s %x: %w", hotBuckets[b], key, err)
		}
		if !at.Before(now) {
			if err := putExpiry(put, at, b, key); err != nil {
				return 0, err
			}
			continue
		}
		if b == hotFamilies {
			var f data.Family
			if err := decodeFamily(raw, &f); err != nil {
				return 0, err
			}
			if err := dropFamilyIndexes(tx, &f); err != nil {
				return 0, err
			}
		}
		if err := bucket.Delete(key); err != nil {
			return 0, err
		}
		switch b {
		case hotCodes:
			r.AuthCodes++
		case hotFamilies:
			r.Families++
		case hotSessions:
			r.Sessions++
		case hotRevoked:
			r.Revocations++
		case hotNonces:
			r.Nonces++
		}
	}
	return len(due), nil
}

// sweep deletes the records of b for which expired returns true (calling
// also for each) and returns how many it deleted.
func sweep[T any](b *bbolt.Bucket, expired func(*T) bool, also func(*T) error) (int, error) {
	var dead [][]byte
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var rec T
		if err := jsonUnmarshal(v, &rec); err != nil {
			return 0, err
		}
		if !expired(&rec) {
			continue
		}
		if also != nil {
			if err := also(&rec); err != nil {
				return 0, err
			}
		}
		dead = append(dead, bytes.Clone(k))
	}
	for _, k := range dead {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(dead), nil
}
