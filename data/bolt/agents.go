package bolt

import (
	"context"
	"fmt"

	"go.etcd.io/bbolt"

	"oauthd/data"
)

// PutAgentHost implements [data.Store.PutAgentHost].
func (s *Store) PutAgentHost(ctx context.Context, h data.AgentHost) error {
	if err := data.ValidateAgentHost(h); err != nil {
		return fmt.Errorf("put agent host: %w", err)
	}
	h = data.NormalizeAgentHost(h)
	return s.update(ctx, "put agent host", func(tx *bbolt.Tx) error {
		return put(tx.Bucket(bucketAgents), []byte(h.Host), h)
	})
}

// GetAgentHost implements [data.Store.GetAgentHost].
func (s *Store) GetAgentHost(ctx context.Context, host string) (data.AgentHost, error) {
	var h data.AgentHost
	err := s.view(ctx, "get agent host", func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketAgents)
		if b == nil { // a read-only file of an earlier release: no host allowed
			return data.AgentHostNotFound("get agent host", host)
		}
		ok, err := get(b, []byte(host), &h)
		if err == nil && !ok {
			err = data.AgentHostNotFound("get agent host", host)
		}
		return err
	})
	return data.NormalizeAgentHost(h), err
}

// ListAgentHosts implements [data.Store.ListAgentHosts], ordered by host.
func (s *Store) ListAgentHosts(ctx context.Context) ([]data.AgentHost, error) {
	out := []data.AgentHost{}
	err := s.view(ctx, "list agent hosts", func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketAgents)
		if b == nil { // a read-only file of an earlier release
			return nil
		}
		hs, err := list[data.AgentHost](b, nil, nil)
		for _, h := range hs {
			out = append(out, data.NormalizeAgentHost(h))
		}
		return err
	})
	return out, err
}

// DeleteAgentHost implements [data.Store.DeleteAgentHost].
func (s *Store) DeleteAgentHost(ctx context.Context, host string) error {
	return s.update(ctx, "delete agent host", func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketAgents)
		if b.Get([]byte(host)) == nil {
			return data.AgentHostNotFound("delete agent host", host)
		}
		return b.Delete([]byte(host))
	})
}
