package bolt

import (
	"context"
	"fmt"
	"oauthd/data"

	bbolt "go.etcd.io/bbolt"
)

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
