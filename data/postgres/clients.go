package postgres

import (
	"context"
	"fmt"
	"oauthd/data"

	"github.com/jackc/pgx/v5"
)

// CreateClient implements [data.Store.CreateClient].
func (s *Store) CreateClient(ctx context.Context, c data.Client) error {
	if err := s.begin(ctx, "create client"); err != nil {
		return err
	}
	if err := data.ValidateClient(c); err != nil {
		return fmt.Errorf("create client %q: %w", c.ID, err)
	}
	tag, err := s.pool.Exec(ctx, `WITH ins AS (
		INSERT INTO clients (id, status, body) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING RETURNING id)
		SELECT pg_notify('`+Channel+`', 'client '||id) FROM ins`, c.ID, string(c.Status), encode(c))
	if err != nil {
		return fmt.Errorf("create client %q: %w", c.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("create client %q: %w", c.ID, data.ErrExists)
	}
	return nil
}

// GetClient implements [data.Store.GetClient].
func (s *Store) GetClient(ctx context.Context, id string) (data.Client, error) {
	ctx, span := data.StartSpan(ctx, tracer, "postgres ", "get client")
	defer span.End()
	if err := s.begin(ctx, "get client"); err != nil {
		return data.Client{}, err
	}
	c, err := queryOne[data.Client](ctx, s.pool, "SELECT body FROM clients WHERE id = $1", id)
	if err != nil {
		return data.Client{}, fmt.Errorf("get client %q: %w", id, err)
	}
	return c, nil
}

// ListClients implements [data.Store.ListClients], ordered by ID.
func (s *Store) ListClients(ctx context.Context, status data.ClientStatus) ([]data.Client, error) {
	if err := s.begin(ctx, "list clients"); err != nil {
		return nil, err
	}
	cs, err := queryAll[data.Client](ctx, s.pool, "SELECT body FROM clients WHERE $1 = '' OR status = $1 ORDER BY id", string(status))
	if err != nil {
		return nil, fmt.Errorf("list clients: %w", err)
	}
	return cs, nil
}

// UpdateClient implements [data.Store.UpdateClient]: the client's row is
// locked from the read to the commit, so concurrent updates from any
// process apply one after another, each to the record the previous one
// committed, and the rules are checked against that record.
func (s *Store) UpdateClient(ctx context.Context, id string, update func(data.Client) (data.Client, error)) (data.Client, error) {
	if err := s.begin(ctx, "update client"); err != nil {
		return data.Client{}, err
	}
	var out data.Client
	err := s.tx(ctx, func(tx pgx.Tx) error {
		old, err := queryOne[data.Client](ctx, tx, "SELECT body FROM clients WHERE id = $1 FOR UPDATE", id)
		if err != nil {
			return fmt.Errorf("update client %q: %w", id, err)
		}
		arg, _ := decode[data.Client](encode(old)) // update may change its argument
		next, err := update(arg)
		if err != nil {
			return err
		}
		if err := data.ValidateClient(next); err != nil {
			return fmt.Errorf("update client %q: %w", id, err)
		}
		if err := data.ValidateClientChange(old, next); err != nil {
			return fmt.Errorf("update client %q: %w", id, err)
		}
		next = data.Reviewed(old, next)
		b := encode(next)
		if _, err := tx.Exec(ctx, "UPDATE clients SET status = $2, body = $3 WHERE id = $1", id, string(next.Status), b); err != nil {
			return fmt.Errorf("update client %q: %w", id, err)
		}
		if err := notify(ctx, tx, "client "+id); err != nil {
			return fmt.Errorf("update client %q: %w", id, err)
		}
		out, err = decode[data.Client](b)
		return err
	})
	if err != nil {
		return data.Client{}, err
	}
	return out, nil
}
