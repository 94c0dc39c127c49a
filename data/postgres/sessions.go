package postgres

import (
	"context"
	"fmt"
	"oauthd/data"
	"time"
)

// CreateSession implements [data.Store.CreateSession] in one statement
// (see insertChecked).
func (s *Store) CreateSession(ctx context.Context, sess data.Session) error {
	ctx, span := data.StartSpan(ctx, tracer, "postgres ", "create session")
	defer span.End()
	if err := s.begin(ctx, "create session"); err != nil {
		return err
	}
	if err := data.ValidateSession(sess); err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	if err := s.execChecked(ctx, insertSession, sess.UserID, sess.Hash, unixNano(sess.ExpiresAt), encode(sess)); err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// NonceUsed implements [data.Store.NonceUsed].
func (s *Store) NonceUsed(ctx context.Context, key []byte) (bool, error) {
	ctx, span := data.StartSpan(ctx, tracer, "postgres ", "nonce used")
	defer span.End()
	if err := s.begin(ctx, "nonce used"); err != nil {
		return false, err
	}
	var used bool
	if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM nonces WHERE key = $1)", key).Scan(&used); err != nil {
		return false, fmt.Errorf("nonce used: %w", err)
	}
	return used, nil
}

// UseNonce implements [data.Store.UseNonce]: the primary key decides
// between concurrent inserts, on any replica.
func (s *Store) UseNonce(ctx context.Context, key []byte, expires time.Time) error {
	ctx, span := data.StartSpan(ctx, tracer, "postgres ", "use nonce")
	defer span.End()
	if err := s.begin(ctx, "use nonce"); err != nil {
		return err
	}
	if len(key) == 0 {
		return fmt.Errorf("use nonce: %w", &data.RuleError{Field: "key", Reason: "a nonce needs its key"})
	}
	tag, err := s.pool.Exec(ctx, "INSERT INTO nonces (key, expires_ns) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
		key, unixNano(expires))
	if err != nil {
		return fmt.Errorf("use nonce: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("use nonce: %w", data.ErrExists)
	}
	return nil
}

// GetSession implements [data.Store.GetSession].
func (s *Store) GetSession(ctx context.Context, hash []byte) (data.Session, error) {
	ctx, span := data.StartSpan(ctx, tracer, "postgres ", "get session")
	defer span.End()
	if err := s.begin(ctx, "get session"); err != nil {
		return data.Session{}, err
	}
	sess, err := queryOne[data.Session](ctx, s.pool, "SELECT body FROM sessions WHERE hash = $1", hash)
	if err != nil {
		return data.Session{}, fmt.Errorf("get session: %w", err)
	}
	return sess, nil
}

// DeleteSession implements [data.Store.DeleteSession].
func (s *Store) DeleteSession(ctx context.Context, hash []byte) error {
	ctx, span := data.StartSpan(ctx, tracer, "postgres ", "delete session")
	defer span.End()
	if err := s.begin(ctx, "delete session"); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, "DELETE FROM sessions WHERE hash = $1", hash)
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete session: %w", data.ErrNotFound)
	}
	return nil
}
