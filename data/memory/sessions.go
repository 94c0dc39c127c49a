package memory

import (
	"context"
	"fmt"
	"oauthd/data"
	"time"
)

// UseNonce implements [data.Store.UseNonce].
func (s *Store) UseNonce(ctx context.Context, key []byte, expires time.Time) error {
	if err := s.lock(ctx, "use nonce"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if len(key) == 0 {
		return fmt.Errorf("use nonce: %w", &data.RuleError{Field: "key", Reason: "a nonce needs its key"})
	}
	if _, ok := s.nonces[string(key)]; ok {
		return fmt.Errorf("use nonce: %w", data.ErrExists)
	}
	s.nonces[string(key)] = expires
	return nil
}

// NonceUsed implements [data.Store.NonceUsed].
func (s *Store) NonceUsed(ctx context.Context, key []byte) (bool, error) {
	if err := s.lock(ctx, "nonce used"); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	_, ok := s.nonces[string(key)]
	return ok, nil
}

// CreateSession implements [data.Store.CreateSession].
func (s *Store) CreateSession(ctx context.Context, sess data.Session) error {
	if err := s.lock(ctx, "create session"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := data.ValidateSession(sess); err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return createHot(s, "create session", s.sessions, sess.Hash, sess.UserID, data.Normalize(sess))
}

// GetSession implements [data.Store.GetSession].
func (s *Store) GetSession(ctx context.Context, hash []byte) (data.Session, error) {
	if err := s.lock(ctx, "get session"); err != nil {
		return data.Session{}, err
	}
	defer s.mu.Unlock()
	sess, ok := s.sessions[string(hash)]
	if !ok {
		return data.Session{}, fmt.Errorf("get session: %w", data.ErrNotFound)
	}
	return data.Normalize(sess), nil
}

// DeleteSession implements [data.Store.DeleteSession].
func (s *Store) DeleteSession(ctx context.Context, hash []byte) error {
	if err := s.lock(ctx, "delete session"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.sessions[string(hash)]; !ok {
		return fmt.Errorf("delete session: %w", data.ErrNotFound)
	}
	delete(s.sessions, string(hash))
	return nil
}
