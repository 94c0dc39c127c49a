package memory

import (
	"context"
	"fmt"
	"oauthd/data"
)

// ListKeys implements [data.Store.ListKeys].
func (s *Store) ListKeys(ctx context.Context) ([]data.SigningKey, error) {
	if err := s.lock(ctx, "list keys"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return data.Normalize(s.keys), nil
}

// UpdateKeys implements [data.Store.UpdateKeys]. The new set must pass
// [data.ValidateKeySet].
func (s *Store) UpdateKeys(ctx context.Context, update func([]data.SigningKey) ([]data.SigningKey, error)) ([]data.SigningKey, error) {
	if err := s.lock(ctx, "update keys"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	next, err := update(data.Normalize(s.keys))
	if err != nil {
		return nil, err
	}
	if err := data.ValidateKeySet(next); err != nil {
		return nil, fmt.Errorf("update keys: %w", err)
	}
	s.keys = data.Normalize(next)
	return data.Normalize(next), nil
}
