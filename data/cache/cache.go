package cache

import (
	"context"
	"sync"

	"oauthd/data"
)

// Store is a [data.Store] whose GetClient is answered from memory after the
// first read. CreateClient and UpdateClient go to the wrapped store and
// then drop the cached record, so the next GetClient reads the committed
// one. Only clients that exist are cached (an unknown client_id costs a
// database read, and cannot grow the cache). Every other method is the
// wrapped store's.
type Store struct {
	data.Store

	mu      sync.RWMutex
	clients map[string]*data.Client // immutable once stored; callers get clones
	gen     uint64                  // bumped by every client write
	closed  bool
}

var _ data.Store = (*Store)(nil)

// New wraps s.
func New(s data.Store) *Store {
	return &Store{Store: s, clients: make(map[string]*data.Client)}
}

// GetClient implements [data.Store.GetClient]. The record returned is a
// copy the caller may keep and modify.
func (s *Store) GetClient(ctx context.Context, id string) (data.Client, error) {
	s.mu.RLock()
	c, ok := s.clients[id]
	gen, closed := s.gen, s.closed
	s.mu.RUnlock()
	if ok && !closed {
		if err := ctx.Err(); err != nil {
			return data.Client{}, err
		}
		return c.Clone(), nil
	}
	loaded, err := s.Store.GetClient(ctx, id)
	if err != nil {
		return data.Client{}, err
	}
	keep := loaded.Clone()
	s.mu.Lock()
	// A write that committed after our read bumped gen: what we read may
	// be older than it, so it is not cached.
	if s.gen == gen {
		s.clients[id] = &keep
	}
	s.mu.Unlock()
	return loaded, nil
}

// CreateClient implements [data.Store.CreateClient].
func (s *Store) CreateClient(ctx context.Context, c data.Client) error {
	defer s.invalidate(c.ID)
	return s.Store.CreateClient(ctx, c)
}

// UpdateClient implements [data.Store.UpdateClient].
func (s *Store) UpdateClient(ctx context.Context, id string, update func(data.Client) (data.Client, error)) (data.Client, error) {
	defer s.invalidate(id)
	return s.Store.UpdateClient(ctx, id, update)
}

// Close drops the cache and closes the wrapped store.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	clear(s.clients)
	s.gen++
	s.mu.Unlock()
	return s.Store.Close()
}

// Invalidate drops every cached client, e.g. after a change made to the
// database behind the wrapper's back.
func (s *Store) Invalidate() {
	s.mu.Lock()
	clear(s.clients)
	s.gen++
	s.mu.Unlock()
}

// invalidate drops id after a write to it has returned (committed or not).
func (s *Store) invalidate(id string) {
	s.mu.Lock()
	delete(s.clients, id)
	s.gen++
	s.mu.Unlock()
}
