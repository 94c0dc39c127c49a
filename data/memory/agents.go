package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"oauthd/data"
)

// PutAgentHost implements [data.Store.PutAgentHost].
func (s *Store) PutAgentHost(ctx context.Context, h data.AgentHost) error {
	if err := data.ValidateAgentHost(h); err != nil {
		return fmt.Errorf("put agent host: %w", err)
	}
	if err := s.lock(ctx, "put agent host"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.agents[h.Host] = data.NormalizeAgentHost(h)
	return nil
}

// GetAgentHost implements [data.Store.GetAgentHost].
func (s *Store) GetAgentHost(ctx context.Context, host string) (data.AgentHost, error) {
	if err := s.lock(ctx, "get agent host"); err != nil {
		return data.AgentHost{}, err
	}
	defer s.mu.Unlock()
	h, ok := s.agents[host]
	if !ok {
		return data.AgentHost{}, data.AgentHostNotFound("get agent host", host)
	}
	return data.NormalizeAgentHost(h), nil
}

// ListAgentHosts implements [data.Store.ListAgentHosts].
func (s *Store) ListAgentHosts(ctx context.Context) ([]data.AgentHost, error) {
	if err := s.lock(ctx, "list agent hosts"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []data.AgentHost{}
	for _, k := range slices.Sorted(maps.Keys(s.agents)) {
		out = append(out, data.NormalizeAgentHost(s.agents[k]))
	}
	return out, nil
}

// DeleteAgentHost implements [data.Store.DeleteAgentHost].
func (s *Store) DeleteAgentHost(ctx context.Context, host string) error {
	if err := s.lock(ctx, "delete agent host"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.agents[host]; !ok {
		return data.AgentHostNotFound("delete agent host", host)
	}
	delete(s.agents, host)
	return nil
}
