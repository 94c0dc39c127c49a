package bolt

import (
	"bytes"
	"context"
	"fmt"
	"oauthd/data"
	"oauthd/data/bolt/internal/wal"
	"time"

	"go.etcd.io/bbolt"
)

// CreateAuthCode implements [data.Store.CreateAuthCode].
func (s *Store) CreateAuthCode(ctx context.Context, c data.AuthCode) error {
	return s.createCode(ctx, "create auth code", c, nil)
}

// CreateConsentedCode implements [data.Store.CreateConsentedCode] as one
// op of the log: the client, the grant and the user's disabled mark are
// read from the bbolt file as the op's batch sees it, and the code is
// written in the same op. [Store.RevokeApp] and a disable are exclusive
// ops (alone, after a checkpoint), so each comes wholly before the batch
// (check sees what it removed) or after it (it removes the code).
func (s *Store) CreateConsentedCode(ctx context.Context, c data.AuthCode, check func(data.Client, data.Grant, bool) error) error {
	const op = "create consented code"
	return s.createCode(ctx, op, c, func(tx *bbolt.Tx) error {
		var cl data.Client
		ok, err := get(tx.Bucket(bucketClients), []byte(c.ClientID), &cl)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if !ok {
			return fmt.Errorf("%s: client %q: %w", op, c.ClientID, data.ErrNotFound)
		}
		var g data.Grant
		found, err := get(tx.Bucket(bucketGrants), grantKey(c.UserID, c.ClientID), &g)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return check(cl, g, found)
	})
}

// createCode stores the new code c with createHot (check, when not nil,
// as its last test).
func (s *Store) createCode(ctx context.Context, op string, c data.AuthCode, check func(*bbolt.Tx) error) error {
	if err := data.ValidateAuthCode(c); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	c = data.Normalize(c)
	key := bytes.Clone(c.Hash)
	raw := appendAuthCode(make([]byte, 0, 256), &c)
	return s.createHot(ctx, op, hotCodes, key, raw, c.UserID, c.ExpiresAt, check)
}

// createHot stores raw under the new key of hot bucket b, for the user
// userID, with its expiry entry, in one op of the log: refused with
// data.ErrExists when the key is taken, data.ErrUserDisabled when the user
// is disabled (what a code and a session are created under), and with
// check's error when check (which may be nil) refuses, reading the bbolt
// file as the op's batch sees it.
func (s *Store) createHot(ctx context.Context, op string, b int, key, raw []byte, userID int64, expires time.Time, check func(*bbolt.Tx) error) error {
	return s.write(ctx, op, func(w *wal.Tx) error {
		if w.Get(b, key) != nil {
			return fmt.Errorf("%s: %w", op, data.ErrExists)
		}
		if userDisabled(w.Bolt(), userID) {
			return fmt.Errorf("%s: user %d: %w", op, userID, data.ErrUserDisabled)
		}
		if check != nil {
			if err := check(w.Bolt()); err != nil {
				return err
			}
		}
		if err := w.Put(b, key, raw); err != nil {
			return err
		}
		return putExpiry(w.Put, expires, b, key)
	})
}

// ExchangeAuthCode implements [data.Store.ExchangeAuthCode]. An error from
// exchange is returned as it is.
func (s *Store) ExchangeAuthCode(ctx context.Context, hash []byte, exchange func(data.AuthCode) (data.Family, error)) (data.AuthCode, data.Family, error) {
	key := bytes.Clone(hash)
	var (
		code data.AuthCode
		fam  data.Family
	)
	err := s.write(ctx, "exchange auth code", func(w *wal.Tx) error {
		code, fam = data.AuthCode{}, data.Family{}
		raw := w.Get(hotCodes, key)
		if raw == nil {
			return fmt.Errorf("exchange auth code: %w", data.ErrNotFound)
		}
		if err := decodeAuthCode(raw, &code); err != nil {
			return fmt.Errorf("exchange auth code: decode: %w", err)
		}
		if code.Used {
			return fmt.Errorf("exchange auth code: %w", data.ErrCodeUsed)
		}
		// A deep copy exchange may change (one decode, not two: this runs
		// in the group committer, serially for the whole batch).
		f, err := exchange(data.Normalize(code))
		if err != nil {
			return err
		}
		if f.ID == "" {
			return fmt.Errorf("exchange auth code: %w", &data.RuleError{Field: "family_id", Reason: "the new family needs an ID"})
		}
		if w.Get(hotFamilies, []byte(f.ID)) != nil {
			return fmt.Errorf("exchange auth code: family %q: %w", f.ID, data.ErrExists)
		}
		f = data.Normalize(f)
		code.Used, code.FamilyID = true, f.ID
		if err := w.Put(hotCodes, key, appendAuthCode(make([]byte, 0, len(raw)+32), &code)); err != nil {
			return err
		}
		if err := putFamily(w.Put, f); err != nil {
			return err
		}
		fam = f
		return nil
	})
	switch {
	case err == nil:
		return code, fam, nil
	case isCodeUsed(err):
		return code, data.Family{}, err
	}
	return data.AuthCode{}, data.Family{}, err
}

func isCodeUsed(err error) bool { return errorsIs(err, data.ErrCodeUsed) }
