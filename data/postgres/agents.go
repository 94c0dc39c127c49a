package postgres

import (
	"context"
	"errors"
	"fmt"

	"oauthd/data"
)

// PutAgentHost implements [data.Store.PutAgentHost].
func (s *Store) PutAgentHost(ctx context.Context, h data.AgentHost) error {
	const op = "put agent host"
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	if err := data.ValidateAgentHost(h); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	h = data.NormalizeAgentHost(h)
	if _, err := s.pool.Exec(ctx, `INSERT INTO agent_hosts (host, body) VALUES ($1, $2)
		ON CONFLICT (host) DO UPDATE SET body = excluded.body`, h.Host, encode(h)); err != nil {
		return fmt.Errorf("%s %q: %w", op, h.Host, err)
	}
	return nil
}

// GetAgentHost implements [data.Store.GetAgentHost].
func (s *Store) GetAgentHost(ctx context.Context, host string) (data.AgentHost, error) {
	const op = "get agent host"
	if err := s.begin(ctx, op); err != nil {
		return data.AgentHost{}, err
	}
	h, err := queryOne[data.AgentHost](ctx, s.pool, "SELECT body FROM agent_hosts WHERE host = $1", host)
	if errors.Is(err, data.ErrNotFound) {
		return data.AgentHost{}, data.AgentHostNotFound(op, host)
	}
	if err != nil {
		return data.AgentHost{}, fmt.Errorf("%s %q: %w", op, host, err)
	}
	return h, nil
}

// ListAgentHosts implements [data.Store.ListAgentHosts], ordered by host.
func (s *Store) ListAgentHosts(ctx context.Context) ([]data.AgentHost, error) {
	const op = "list agent hosts"
	if err := s.begin(ctx, op); err != nil {
		return nil, err
	}
	out, err := queryAll[data.AgentHost](ctx, s.pool, "SELECT body FROM agent_hosts ORDER BY host")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return out, nil
}

// DeleteAgentHost implements [data.Store.DeleteAgentHost].
func (s *Store) DeleteAgentHost(ctx context.Context, host string) error {
	const op = "delete agent host"
	if err := s.begin(ctx, op); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, "DELETE FROM agent_hosts WHERE host = $1", host)
	if err != nil {
		return fmt.Errorf("%s %q: %w", op, host, err)
	}
	if tag.RowsAffected() == 0 {
		return data.AgentHostNotFound(op, host)
	}
	return nil
}
