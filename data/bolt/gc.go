package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"oauthd/data"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// GarbageCollect implements [data.Store.GarbageCollect]. It runs after a
// checkpoint, on the bbolt file, and writes to it directly.
func (s *Store) GarbageCollect(ctx context.Context, now time.Time) (data.GCResult, error) {
	var r data.GCResult
	err := s.exclusive(ctx, "garbage collect", true, func(tx *bbolt.Tx) error {
		r = data.GCResult{}
		var err error
		if r.AuthCodes, err = sweep(tx.Bucket(bucketCodes), func(c *data.AuthCode) bool {
			return c.ExpiresAt.Before(now)
		}, nil); err != nil {
			return err
		}
		idx, byUser := tx.Bucket(bucketFamByClient), tx.Bucket(bucketFamByUser)
		if r.Families, err = sweep(tx.Bucket(bucketFamilies), func(f *data.Family) bool {
			return f.ExpiresAt.Before(now) || (!f.AbsoluteExp.IsZero() && f.AbsoluteExp.Before(now))
		}, func(f *data.Family) error {
			if err := byUser.Delete(familyUserKey(f.UserID, f.ClientID, f.ID)); err != nil {
				return err
			}
			return idx.Delete(familyIndexKey(f.ClientID, f.ID))
		}); err != nil {
			return err
		}
		if r.Sessions, err = sweep(tx.Bucket(bucketSessions), func(s *data.Session) bool {
			return s.ExpiresAt.Before(now)
		}, nil); err != nil {
			return err
		}
		r.Revocations, err = sweep(tx.Bucket(bucketRevoked), func(r *data.Revocation) bool {
			return r.LastIssuedAt.Add(data.RevocationKeep).Before(now)
		}, nil)
		if err != nil {
			return err
		}
		r.Nonces, err = sweepNonces(tx.Bucket(bucketNonces), now)
		return err
	})
	if err != nil {
		return data.GCResult{}, fmt.Errorf("garbage collect: %w", err)
	}
	return r, nil
}

// sweepNonces deletes the nonces that expired before now.
func sweepNonces(b *bbolt.Bucket, now time.Time) (int, error) {
	var dead [][]byte
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(v) != 8 || int64(binary.BigEndian.Uint64(v)) < now.UnixNano() {
			dead = append(dead, bytes.Clone(k))
		}
	}
	for _, k := range dead {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(dead), nil
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
