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

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// Consent grants.

func grantKey(userID int64, clientID string) []byte {
	return append(itob(userID), clientID...)
}

// PutGrant implements [data.Store.PutGrant]: it creates or replaces the grant
// of g.UserID to g.ClientID.
func (s *Store) PutGrant(ctx context.Context, g data.Grant) error {
	g = data.Normalize(g)
	return s.update(ctx, "put grant", func(tx *bbolt.Tx) error {
		if userDisabled(tx, g.UserID) {
			return fmt.Errorf("put grant: user %d: %w", g.UserID, data.ErrUserDisabled)
		}
		return put(tx.Bucket(bucketGrants), grantKey(g.UserID, g.ClientID), g)
	})
}

// GetGrant implements [data.Store.GetGrant].
func (s *Store) GetGrant(ctx context.Context, userID int64, clientID string) (data.Grant, error) {
	var g data.Grant
	err := s.view(ctx, "get grant", func(tx *bbolt.Tx) error {
		ok, err := get(tx.Bucket(bucketGrants), grantKey(userID, clientID), &g)
		if err == nil && !ok {
			err = fmt.Errorf("get grant of user %d to %q: %w", userID, clientID, data.ErrNotFound)
		}
		return err
	})
	return g, err
}

// ListGrants implements [data.Store.ListGrants], ordered by client ID.
func (s *Store) ListGrants(ctx context.Context, userID int64) ([]data.Grant, error) {
	var out []data.Grant
	err := s.view(ctx, "list grants", func(tx *bbolt.Tx) error {
		var err error
		out, err = list[data.Grant](tx.Bucket(bucketGrants), itob(userID), nil)
		return err
	})
	return out, err
}

// DeleteGrant implements [data.Store.DeleteGrant].
func (s *Store) DeleteGrant(ctx context.Context, userID int64, clientID string) error {
	return s.update(ctx, "delete grant", func(tx *bbolt.Tx) error {
		b, k := tx.Bucket(bucketGrants), grantKey(userID, clientID)
		if b.Get(k) == nil {
			return fmt.Errorf("delete grant of user %d to %q: %w", userID, clientID, data.ErrNotFound)
		}
		return b.Delete(k)
	})
}

// Signing keys.

// ListKeys implements [data.Store.ListKeys].
func (s *Store) ListKeys(ctx context.Context) ([]data.SigningKey, error) {
	var ks []data.SigningKey
	err := s.view(ctx, "list keys", func(tx *bbolt.Tx) error {
		_, err := get(tx.Bucket(bucketKeys), keySetKey, &ks)
		return err
	})
	return ks, err
}

// UpdateKeys implements [data.Store.UpdateKeys]. The new set must pass
// [data.ValidateKeySet].
func (s *Store) UpdateKeys(ctx context.Context, update func([]data.SigningKey) ([]data.SigningKey, error)) ([]data.SigningKey, error) {
	var next []data.SigningKey
	err := s.update(ctx, "update keys", func(tx *bbolt.Tx) error {
		var cur []data.SigningKey
		b := tx.Bucket(bucketKeys)
		if _, err := get(b, keySetKey, &cur); err != nil {
			return err
		}
		ks, err := update(cur)
		if err != nil {
			return err
		}
		if err := data.ValidateKeySet(ks); err != nil {
			return fmt.Errorf("update keys: %w", err)
		}
		next = data.Normalize(ks)
		return put(b, keySetKey, next)
	})
	if err != nil {
		return nil, err
	}
	return next, nil
}

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
