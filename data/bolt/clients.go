package bolt

import (
	"context"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"oauthd/data"
)

// CreateClient implements [data.Store.CreateClient].
func (s *Store) CreateClient(ctx context.Context, c data.Client) error {
	if err := s.begin(ctx, "create client"); err != nil {
		return err
	}
	if err := data.ValidateClient(c); err != nil {
		return fmt.Errorf("create client %q: %w", c.ID, err)
	}
	c = data.Normalize(c)
	return s.update(ctx, "create client", func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketClients)
		if b.Get([]byte(c.ID)) != nil {
			return fmt.Errorf("create client %q: %w", c.ID, data.ErrExists)
		}
		return put(b, []byte(c.ID), c)
	})
}

// GetClient implements [data.Store.GetClient].
func (s *Store) GetClient(ctx context.Context, id string) (data.Client, error) {
	var c data.Client
	err := s.view(ctx, "get client", func(tx *bbolt.Tx) error {
		ok, err := get(tx.Bucket(bucketClients), []byte(id), &c)
		if err == nil && !ok {
			err = fmt.Errorf("get client %q: %w", id, data.ErrNotFound)
		}
		return err
	})
	return c, err
}

// ListClients implements [data.Store.ListClients], ordered by ID.
func (s *Store) ListClients(ctx context.Context, status data.ClientStatus) ([]data.Client, error) {
	var out []data.Client
	err := s.view(ctx, "list clients", func(tx *bbolt.Tx) error {
		var err error
		out, err = list(tx.Bucket(bucketClients), nil, func(c *data.Client) bool {
			return status == "" || c.Status == status
		})
		return err
	})
	return out, err
}

// UpdateClient implements [data.Store.UpdateClient].
func (s *Store) UpdateClient(ctx context.Context, id string, update func(data.Client) (data.Client, error)) (data.Client, error) {
	var next data.Client
	err := s.update(ctx, "update client", func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketClients)
		var old data.Client
		ok, err := get(b, []byte(id), &old)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("update client %q: %w", id, data.ErrNotFound)
		}
		var arg data.Client
		if _, err := get(b, []byte(id), &arg); err != nil { // a copy update may change
			return err
		}
		next, err = update(arg)
		if err != nil {
			return err
		}
		if err := data.ValidateClient(next); err != nil {
			return fmt.Errorf("update client %q: %w", id, err)
		}
		if err := data.ValidateClientChange(old, next); err != nil {
			return fmt.Errorf("update client %q: %w", id, err)
		}
		next = data.Normalize(data.Reviewed(old, next))
		return put(b, []byte(id), next)
	})
	if err != nil {
		return data.Client{}, err
	}
	return next, nil
}
