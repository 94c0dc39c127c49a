package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"oauthd/data"
	"oauthd/data/bolt/internal/wal"
	"time"
)

// CreateSession implements [data.Store.CreateSession].
func (s *Store) CreateSession(ctx context.Context, sess data.Session) error {
	if err := data.ValidateSession(sess); err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	sess = data.Normalize(sess)
	key := bytes.Clone(sess.Hash)
	raw, err := json.Marshal(sess)
	if err != nil {
		return fmt.Errorf("create session: encode: %w", err)
	}
	return s.createHot(ctx, "create session", hotSessions, key, raw, sess.UserID, sess.ExpiresAt, nil)
}

// UseNonce implements [data.Store.UseNonce]. It is a hot write: it goes
// through the log and the group commit like a session.
func (s *Store) UseNonce(ctx context.Context, key []byte, expires time.Time) error {
	if len(key) == 0 {
		return fmt.Errorf("use nonce: %w", &data.RuleError{Field: "key", Reason: "a nonce needs its key"})
	}
	k := bytes.Clone(key)
	val := binary.BigEndian.AppendUint64(nil, uint64(expires.UnixNano()))
	return s.write(ctx, "use nonce", func(w *wal.Tx) error {
		if w.Get(hotNonces, k) != nil {
			return fmt.Errorf("use nonce: %w", data.ErrExists)
		}
		if err := w.Put(hotNonces, k, val); err != nil {
			return err
		}
		return putExpiry(w.Put, time.Unix(0, expires.UnixNano()), hotNonces, k) // as stored
	})
}

// NonceUsed implements [data.Store.NonceUsed]: a point read, the log's
// overlay first.
func (s *Store) NonceUsed(ctx context.Context, key []byte) (bool, error) {
	if err := s.begin(ctx, "nonce used"); err != nil {
		return false, err
	}
	raw, err := s.log.Get(hotNonces, key)
	if err != nil {
		return false, fmt.Errorf("nonce used: %w", unavailable(err))
	}
	return raw != nil, nil
}

// GetSession implements [data.Store.GetSession].
func (s *Store) GetSession(ctx context.Context, hash []byte) (data.Session, error) {
	if err := s.begin(ctx, "get session"); err != nil {
		return data.Session{}, err
	}
	raw, err := s.log.Get(hotSessions, hash)
	if err != nil {
		return data.Session{}, fmt.Errorf("get session: %w", unavailable(err))
	}
	if raw == nil {
		return data.Session{}, fmt.Errorf("get session: %w", data.ErrNotFound)
	}
	var sess data.Session
	if err := jsonUnmarshal(raw, &sess); err != nil {
		return data.Session{}, fmt.Errorf("get session: %w", unavailable(err))
	}
	return sess, nil
}

// DeleteSession implements [data.Store.DeleteSession].
func (s *Store) DeleteSession(ctx context.Context, hash []byte) error {
	key := bytes.Clone(hash)
	return s.write(ctx, "delete session", func(w *wal.Tx) error {
		if w.Get(hotSessions, key) == nil {
			return fmt.Errorf("delete session: %w", data.ErrNotFound)
		}
		w.Delete(hotSessions, key)
		return nil
	})
}
