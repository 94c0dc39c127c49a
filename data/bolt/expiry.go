package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	bbolt "go.etcd.io/bbolt"

	"oauthd/data"
)

// The expiry index (bucket "expiry", a hot bucket) is how GarbageCollect
// finds what expired without reading every record, as PostgreSQL's gc_ns.
// An entry's key is the 8-byte time (expiryTime) of a lower bound of a
// record's expiry, the record's hot bucket (one byte: hotCodes,
// hotFamilies, hotSessions, hotRevoked or hotNonces) and the record's key;
// its value is empty.
//
// The one rule: every such record has an entry at or before the time
// GarbageCollect may remove it (expiryOf). Entries may go stale, and only
// the sweep (gc.go) removes or moves them:
//   - the write that creates a record puts its entry, in the same op
//     (putExpiry: CreateAuthCode, putFamily, putRevocation, CreateSession,
//     UseNonce);
//   - a rotation puts a new entry only when it moves the family's expiry
//     earlier (RotateRefreshToken), never when it extends it (the common
//     case): the hot path writes nothing more;
//   - a delete leaves the entry: the sweep drops an entry whose record is
//     gone, and moves the entry of a record still alive to its expiry.
//
// Files written before the index get it at Open (buildExpiryIndex).

// expiryTime is t in Unix nanoseconds, clamped to int64, as 8 bytes whose
// order is the times' order (the sign bit flipped).
func expiryTime(t time.Time) uint64 {
	var ns int64
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		ns = math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		ns = math.MaxInt64
	default:
		ns = t.UnixNano()
	}
	return uint64(ns) ^ 1<<63
}

// expiryKey is the index key of the record key of hot bucket b whose
// expiry is at or after at.
func expiryKey(at time.Time, b int, key []byte) []byte {
	k := make([]byte, 0, 9+len(key))
	k = binary.BigEndian.AppendUint64(k, expiryTime(at))
	k = append(k, byte(b))
	return append(k, key...)
}

// putExpiry puts the index entry of a record (see above) through put: a
// wal.Tx's Put, or boltPut's.
func putExpiry(put putFunc, at time.Time, b int, key []byte) error {
	return put(hotExpiry, expiryKey(at, b, key), nil)
}

// putFunc writes a value in a hot bucket: [wal.Tx.Put] in a hot write, or
// boltPut in a bbolt transaction (an exclusive op).
type putFunc func(b int, key, val []byte) error

// boltPut is the putFunc of a write transaction of the bbolt file.
func boltPut(tx *bbolt.Tx) putFunc {
	return func(b int, key, val []byte) error { return tx.Bucket(hotBuckets[b]).Put(key, val) }
}

// familyExpiry is when GarbageCollect may remove f: the earlier of its
// idle and absolute expiry (zero: none).
func familyExpiry(f *data.Family) time.Time {
	if !f.AbsoluteExp.IsZero() && f.AbsoluteExp.Before(f.ExpiresAt) {
		return f.AbsoluteExp
	}
	return f.ExpiresAt
}

// expiryOf is when GarbageCollect may remove raw, a record of hot bucket
// b: the one place that says so for each kind of record.
func expiryOf(b int, raw []byte) (time.Time, error) {
	switch b {
	case hotCodes:
		var c data.AuthCode
		err := decodeAuthCode(raw, &c)
		return c.ExpiresAt, err
	case hotFamilies:
		var f data.Family
		err := decodeFamily(raw, &f)
		return familyExpiry(&f), err
	case hotSessions:
		var s data.Session
		err := json.Unmarshal(raw, &s)
		return s.ExpiresAt, err
	case hotRevoked:
		var r data.Revocation
		err := json.Unmarshal(raw, &r)
		return r.LastIssuedAt.Add(data.RevocationKeep), err
	case hotNonces:
		if len(raw) != 8 {
			return time.Time{}, nil // malformed: remove it
		}
		return time.Unix(0, int64(binary.BigEndian.Uint64(raw))).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("expiry index: bucket %d has no expiry", b)
}

// expiring are the hot buckets whose records expire, in the index.
var expiring = []int{hotCodes, hotFamilies, hotSessions, hotRevoked, hotNonces}

// buildChunk is how many entries one transaction of buildExpiryIndex
// puts.
var buildChunk = 50_000

// buildExpiryIndex fills the expiry index from the records, once: files
// written before the index existed have none. Open runs it after the log's
// replay, before any write, like buildUserIndex. It reads every entry
// (about 50 bytes each, held until the end), sorts them and puts them in
// key order, in transactions of buildChunk entries: appends, each page
// written once (putting them in the records' order dirtied nearly every
// page of the index at each commit, and one transaction moved a node of a
// million keys at each insert; either took minutes at 1 M families). The
// marker goes last, so an Open stopped half-way builds it again (the puts
// are idempotent).
func buildExpiryIndex(db *bbolt.DB) error {
	built := false
	var keys [][]byte
	err := db.View(func(tx *bbolt.Tx) error {
		if built = tx.Bucket(bucketMeta).Get(keyExpiryIndex) != nil; built {
			return nil
		}
		var arena []byte // keys in blocks, so that a key never moves
		for _, b := range expiring {
			err := tx.Bucket(hotBuckets[b]).ForEach(func(k, v []byte) error {
				at, err := expiryOf(b, v)
				if err != nil {
					return fmt.Errorf("%s %x: %w", hotBuckets[b], k, err)
				}
				if n := 9 + len(k); cap(arena)-len(arena) < n {
					arena = make([]byte, 0, max(n, 1<<20))
				}
				start := len(arena)
				arena = binary.BigEndian.AppendUint64(arena, expiryTime(at))
				arena = append(append(arena, byte(b)), k...)
				keys = append(keys, arena[start:len(arena):len(arena)])
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || built {
		return err
	}
	slices.SortFunc(keys, bytes.Compare)
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), buildChunk)]
		keys = keys[len(chunk):]
		err := db.Update(func(tx *bbolt.Tx) error {
			idx := tx.Bucket(bucketExpiry)
			for _, k := range chunk {
				if err := idx.Put(k, nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyExpiryIndex, []byte("1")) })
}
