package memory

import (
	"context"
	"fmt"
	"maps"
	"oauthd/data"
	"slices"
)

// CreateClient implements [data.Store.CreateClient].
func (s *Store) CreateClient(ctx context.Context, c data.Client) error {
	if err := s.lock(ctx, "create client"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := data.ValidateClient(c); err != nil {
		return fmt.Errorf("create client %q: %w", c.ID, err)
	}
	if _, ok := s.clients[c.ID]; ok {
		return fmt.Errorf("create client %q: %w", c.ID, data.ErrExists)
	}
	s.clients[c.ID] = data.Normalize(c)
	return nil
}

// GetClient implements [data.Store.GetClient].
func (s *Store) GetClient(ctx context.Context, id string) (data.Client, error) {
	if err := s.lock(ctx, "get client"); err != nil {
		return data.Client{}, err
	}
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return data.Client{}, fmt.Errorf("get client %q: %w", id, data.ErrNotFound)
	}
	return data.Normalize(c), nil
}

// ListClients implements [data.Store.ListClients], ordered by ID.
func (s *Store) ListClients(ctx context.Context, status data.ClientStatus) ([]data.Client, error) {
	if err := s.lock(ctx, "list clients"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []data.Client{}
	for _, id := range slices.Sorted(maps.Keys(s.clients)) {
		if c := s.clients[id]; status == "" || c.Status == status {
			out = append(out, data.Normalize(c))
		}
	}
	return out, nil
}

// UpdateClient implements [data.Store.UpdateClient].
func (s *Store) UpdateClient(ctx context.Context, id string, update func(data.Client) (data.Client, error)) (data.Client, error) {
	if err := s.lock(ctx, "update client"); err != nil {
		return data.Client{}, err
	}
	defer s.mu.Unlock()
	old, ok := s.clients[id]
	if !ok {
		return data.Client{}, fmt.Errorf("update client %q: %w", id, data.ErrNotFound)
	}
	next, err := update(data.Normalize(old))
	if err != nil {
		return data.Client{}, err
	}
	if err := data.ValidateClient(next); err != nil {
		return data.Client{}, fmt.Errorf("update client %q: %w", id, err)
	}
	if err := data.ValidateClientChange(old, next); err != nil {
		return data.Client{}, fmt.Errorf("update client %q: %w", id, err)
	}
	next = data.Reviewed(old, next)
	s.clients[id] = data.Normalize(next)
	return data.Normalize(next), nil
}
