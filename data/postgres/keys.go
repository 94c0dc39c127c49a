package postgres

import (
	"context"
	"fmt"
	"oauthd/data"

	"github.com/jackc/pgx/v5"
)

// ListKeys implements [data.Store.ListKeys].
func (s *Store) ListKeys(ctx context.Context) ([]data.SigningKey, error) {
	if err := s.begin(ctx, "list keys"); err != nil {
		return nil, err
	}
	ks, err := queryOne[[]data.SigningKey](ctx, s.pool, "SELECT body FROM key_set WHERE id = 1")
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return ks, nil
}

// UpdateKeys implements [data.Store.UpdateKeys]. The key set's one row is
// locked from the read to the commit: rotations, revocations and prunes
// from any number of processes apply one after another, each to the set
// the previous one committed, and a set that breaks
// [data.ValidateKeySet] is never written.
func (s *Store) UpdateKeys(ctx context.Context, update func([]data.SigningKey) ([]data.SigningKey, error)) ([]data.SigningKey, error) {
	if err := s.begin(ctx, "update keys"); err != nil {
		return nil, err
	}
	var out []data.SigningKey
	err := s.tx(ctx, func(tx pgx.Tx) error {
		cur, err := queryOne[[]data.SigningKey](ctx, tx, "SELECT body FROM key_set WHERE id = 1 FOR UPDATE")
		if err != nil {
			return fmt.Errorf("update keys: %w", err)
		}
		next, err := update(cur)
		if err != nil {
			return err
		}
		if err := data.ValidateKeySet(next); err != nil {
			return fmt.Errorf("update keys: %w", err)
		}
		if next == nil {
			next = []data.SigningKey{}
		}
		b := encode(next)
		if _, err := tx.Exec(ctx, "UPDATE key_set SET version = version + 1, body = $1 WHERE id = 1", b); err != nil {
			return fmt.Errorf("update keys: %w", err)
		}
		if err := notify(ctx, tx, "keys"); err != nil {
			return fmt.Errorf("update keys: %w", err)
		}
		out, err = decode[[]data.SigningKey](b)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
