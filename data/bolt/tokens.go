package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"

	"oauthd/data"
	"oauthd/data/bolt/internal/wal"
)

// The writes in this file go through the group commit and the write-ahead
// log ([wal.Log.Write]). Each op decides first and writes last; the writes
// of an op that fails are discarded.

// CreateAuthCode implements [data.Store.CreateAuthCode].
func (s *Store) CreateAuthCode(ctx context.Context, c data.AuthCode) error {
	if len(c.Hash) == 0 {
		return fmt.Errorf("create auth code: %w", &data.RuleError{Field: "hash", Reason: "an authorization code needs its hash"})
	}
	c = data.Normalize(c)
	key := bytes.Clone(c.Hash)
	raw := appendAuthCode(make([]byte, 0, 256), &c)
	return s.write(ctx, "create auth code", func(w *wal.Tx) error {
		if w.Get(hotCodes, key) != nil {
			return fmt.Errorf("create auth code: %w", data.ErrExists)
		}
		if userDisabled(w.Bolt(), c.UserID) {
			return fmt.Errorf("create auth code: user %d: %w", c.UserID, data.ErrUserDisabled)
		}
		return w.Put(hotCodes, key, raw)
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
		if err := putFamily(w, f); err != nil {
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

// familyIndexKey is the key of a family in the by-client index.
func familyIndexKey(clientID, familyID string) []byte {
	k := make([]byte, 0, len(clientID)+1+len(familyID))
	k = append(k, clientID...)
	k = append(k, 0)
	return append(k, familyID...)
}

// familyUserKey is the key of a family in the by-user index: the user's
// 8-byte ID, the client ID, a 0 byte and the family ID, so that a user's
// families come grouped by client.
func familyUserKey(userID int64, clientID, familyID string) []byte {
	k := make([]byte, 0, 8+len(clientID)+1+len(familyID))
	k = binary.BigEndian.AppendUint64(k, uint64(userID))
	k = append(k, clientID...)
	k = append(k, 0)
	return append(k, familyID...)
}

// buildUserIndex fills the by-user index from the families bucket, once:
// files written before the index existed have none. Open runs it after
// the log's replay, before any write.
func buildUserIndex(tx *bbolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta.Get(keyUserIndex) != nil {
		return nil
	}
	idx := tx.Bucket(bucketFamByUser)
	err := tx.Bucket(bucketFamilies).ForEach(func(k, v []byte) error {
		var f data.Family
		if err := jsonUnmarshal(v, &f); err != nil {
			return fmt.Errorf("family %q: %w", k, err)
		}
		return idx.Put(familyUserKey(f.UserID, f.ClientID, f.ID), []byte{})
	})
	if err != nil {
		return err
	}
	return meta.Put(keyUserIndex, []byte("1"))
}

// appendFill is the fill percent of the family buckets, whose new keys
// sort last (family IDs begin with their creation time): a full last page
// splits into a full page and a new one instead of two half-full ones, so
// appends split half as often and the pages stay dense. A rotation rewrites
// a family at the same size. (Codes keep bbolt's default: the exchange
// makes a code's record longer, which would split full pages.)
const appendFill = 0.9

// putFamily stores f and its index entry.
func putFamily(w *wal.Tx, f data.Family) error {
	if err := w.Put(hotFamilies, []byte(f.ID), appendFamily(make([]byte, 0, 256), &f)); err != nil {
		return err
	}
	if err := w.Put(hotFamByClient, familyIndexKey(f.ClientID, f.ID), nil); err != nil {
		return err
	}
	return w.Put(hotFamByUser, familyUserKey(f.UserID, f.ClientID, f.ID), nil)
}

// deleteFamily removes f and its index entry, and stores its tombstone.
func deleteFamily(w *wal.Tx, f data.Family) error {
	raw, err := json.Marshal(data.RevocationOf(f))
	if err != nil {
		return err
	}
	if err := w.Put(hotRevoked, []byte(f.ID), raw); err != nil {
		return err
	}
	w.Delete(hotFamilies, []byte(f.ID))
	w.Delete(hotFamByClient, familyIndexKey(f.ClientID, f.ID))
	w.Delete(hotFamByUser, familyUserKey(f.UserID, f.ClientID, f.ID))
	return nil
}

// GetFamily implements [data.Store.GetFamily].
func (s *Store) GetFamily(ctx context.Context, id string) (data.Family, error) {
	if err := s.begin(ctx, "get family"); err != nil {
		return data.Family{}, err
	}
	raw, err := s.log.Get(hotFamilies, []byte(id))
	if err != nil {
		return data.Family{}, fmt.Errorf("get family %q: %w", id, unavailable(err))
	}
	if raw == nil {
		return data.Family{}, fmt.Errorf("get family %q: %w", id, data.ErrNotFound)
	}
	var f data.Family
	if err := jsonUnmarshal(raw, &f); err != nil {
		return data.Family{}, fmt.Errorf("get family %q: %w", id, unavailable(err))
	}
	return f, nil
}

// RotateRefreshToken implements [data.Store.RotateRefreshToken]. An error
// from update is returned as it is.
func (s *Store) RotateRefreshToken(ctx context.Context, id string, update func(data.Family) (data.Family, error)) (data.Family, error) {
	var out data.Family
	key := []byte(id)
	err := s.write(ctx, "rotate refresh token", func(w *wal.Tx) error {
		out = data.Family{}
		raw := w.Get(hotFamilies, key)
		if raw == nil {
			return fmt.Errorf("rotate refresh token: family %q: %w", id, data.ErrNotFound)
		}
		var old data.Family
		if err := jsonUnmarshal(raw, &old); err != nil {
			return err
		}
		clientID := old.ClientID
		next, err := update(old) // old is this fn's own decoded copy
		if errorsIs(err, data.ErrTokenReused) {
			// The stored record, decoded again (update may have changed
			// its copy): rare, and it keeps the hot path free of a copy.
			if derr := jsonUnmarshal(raw, &out); derr != nil {
				return derr
			}
			if derr := deleteFamily(w, out); derr != nil {
				return derr
			}
			return wal.Keep(err)
		}
		if err != nil {
			return err
		}
		if next.ID != id || next.ClientID != clientID {
			return fmt.Errorf("rotate refresh token: %w", &data.RuleError{Field: "family", Reason: "a rotation cannot change the family or client ID"})
		}
		next = data.Normalize(next)
		if err := w.Put(hotFamilies, key, appendFamily(make([]byte, 0, 320), &next)); err != nil {
			return err
		}
		out = next
		return nil
	})
	if err != nil && !errorsIs(err, data.ErrTokenReused) {
		return data.Family{}, err
	}
	return out, err
}

// DeleteFamily implements [data.Store.DeleteFamily].
func (s *Store) DeleteFamily(ctx context.Context, id string) error {
	key := []byte(id)
	return s.write(ctx, "delete family", func(w *wal.Tx) error {
		raw := w.Get(hotFamilies, key)
		if raw == nil {
			return fmt.Errorf("delete family %q: %w", id, data.ErrNotFound)
		}
		var f data.Family
		if err := jsonUnmarshal(raw, &f); err != nil {
			return err
		}
		return deleteFamily(w, f)
	})
}

// ListFamilies implements [data.Store.ListFamilies], ordered by ID. It
// runs after a checkpoint, on the bbolt file.
func (s *Store) ListFamilies(ctx context.Context, clientID string) ([]data.Family, error) {
	var out []data.Family
	err := s.exclusive(ctx, "list families", false, func(tx *bbolt.Tx) error {
		fams := tx.Bucket(bucketFamilies)
		if clientID == "" {
			var err error
			out, err = list[data.Family](fams, nil, nil)
			return err
		}
		out = []data.Family{}
		prefix := familyIndexKey(clientID, "")
		c := tx.Bucket(bucketFamByClient).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			var f data.Family
			ok, err := get(fams, k[len(prefix):], &f)
			if err != nil {
				return err
			}
			if ok {
				out = append(out, f)
			}
		}
		return nil
	})
	return out, err
}

// ListUserFamilies implements [data.Store.ListUserFamilies] without a
// checkpoint (a page view must not pause the hot writes): the index
// entries of the user written since the last checkpoint (the overlay,
// read first) and those in the bbolt file, each family then read as
// GetFamily reads it; an entry whose family is gone is skipped. A
// checkpoint between the two reads only moves entries from the first
// place to the second.
func (s *Store) ListUserFamilies(ctx context.Context, userID int64) ([]data.Family, error) {
	if err := s.begin(ctx, "list user families"); err != nil {
		return nil, err
	}
	prefix := binary.BigEndian.AppendUint64(nil, uint64(userID))
	keys := map[string]bool{}
	s.log.Pending(hotFamByUser, func(k, _ []byte, del bool) {
		if !del && bytes.HasPrefix(k, prefix) {
			keys[string(k)] = true
		}
	})
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketFamByUser).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			keys[string(k)] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list user families: %w", err)
	}
	out := []data.Family{}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		i := strings.LastIndexByte(k, 0)
		if i < len(prefix) {
			continue
		}
		raw, err := s.log.Get(hotFamilies, []byte(k[i+1:]))
		if err != nil {
			return nil, fmt.Errorf("list user families: %w", err)
		}
		if raw == nil {
			continue
		}
		var f data.Family
		if err := jsonUnmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("list user families: %w", err)
		}
		if f.UserID == userID {
			out = append(out, f)
		}
	}
	return out, nil
}

// RevokeApp implements [data.Store.RevokeApp] as an exclusive op (after a
// checkpoint, alone with the hot writes), so that no code exchange or
// rotation interleaves with it: the pair's codes (a scan of the codes
// bucket, which holds only codes younger than their expiry), its families
// (from the index by user, each with its tombstone) and the grant, in
// one bbolt transaction.
func (s *Store) RevokeApp(ctx context.Context, userID int64, clientID string) (data.AppRevocation, error) {
	var r data.AppRevocation
	err := s.log.Exclusive(ctx, "revoke app", true, func(tx *bbolt.Tx) error {
		r = data.AppRevocation{}
		var err error
		if r.Codes, err = sweep(tx.Bucket(bucketCodes), func(c *data.AuthCode) bool {
			return c.UserID == userID && c.ClientID == clientID
		}, nil); err != nil {
			return err
		}
		fams, byUser := tx.Bucket(bucketFamilies), tx.Bucket(bucketFamByUser)
		prefix := familyUserKey(userID, clientID, "")
		var dead [][]byte
		c := byUser.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			dead = append(dead, bytes.Clone(k))
		}
		byClient, rev := tx.Bucket(bucketFamByClient), tx.Bucket(bucketRevoked)
		for _, k := range dead {
			id := k[len(prefix):]
			var f data.Family
			ok, err := get(fams, id, &f)
			if err != nil {
				return err
			}
			if err := byUser.Delete(k); err != nil {
				return err
			}
			if !ok {
				continue
			}
			raw, err := json.Marshal(data.RevocationOf(f))
			if err != nil {
				return err
			}
			if err := rev.Put(id, raw); err != nil {
				return err
			}
			if err := byClient.Delete(familyIndexKey(f.ClientID, f.ID)); err != nil {
				return err
			}
			if err := fams.Delete(id); err != nil {
				return err
			}
			r.Families = append(r.Families, f.ID)
		}
		grants, gk := tx.Bucket(bucketGrants), grantKey(userID, clientID)
		if grants.Get(gk) != nil {
			r.Grant = true
			return grants.Delete(gk)
		}
		return nil
	})
	if err != nil {
		return data.AppRevocation{}, fmt.Errorf("revoke app %q of user %d: %w", clientID, userID, err)
	}
	return r, nil
}

// Sessions.

// CreateSession implements [data.Store.CreateSession].
func (s *Store) CreateSession(ctx context.Context, sess data.Session) error {
	if len(sess.Hash) == 0 {
		return fmt.Errorf("create session: %w", &data.RuleError{Field: "hash", Reason: "a session needs its hash"})
	}
	sess = data.Normalize(sess)
	key := bytes.Clone(sess.Hash)
	raw, err := json.Marshal(sess)
	if err != nil {
		return fmt.Errorf("create session: encode: %w", err)
	}
	return s.write(ctx, "create session", func(w *wal.Tx) error {
		if w.Get(hotSessions, key) != nil {
			return fmt.Errorf("create session: %w", data.ErrExists)
		}
		if userDisabled(w.Bolt(), sess.UserID) {
			return fmt.Errorf("create session: user %d: %w", sess.UserID, data.ErrUserDisabled)
		}
		return w.Put(hotSessions, key, raw)
	})
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
		return w.Put(hotNonces, k, val)
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

// ListRevoked implements [data.Store.ListRevoked] without a checkpoint:
// the tombstones written since the last one (the overlay, read first) and
// those in the bbolt file. Tombstones are only ever added through the log
// (the collector removes them from the file), so an overlay read before
// the file view never misses one that a checkpoint moved in between.
func (s *Store) ListRevoked(ctx context.Context, since time.Time) ([]data.Revocation, error) {
	if err := s.begin(ctx, "list revoked"); err != nil {
		return nil, err
	}
	byID := map[string][]byte{}
	err := s.log.Pending(hotRevoked, func(k, v []byte, del bool) {
		if !del {
			byID[string(k)] = v
		}
	})
	if err != nil {
		return nil, fmt.Errorf("list revoked: %w", err)
	}
	err = s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketRevoked).ForEach(func(k, v []byte) error {
			if _, ok := byID[string(k)]; !ok {
				byID[string(k)] = bytes.Clone(v)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list revoked: %w", err)
	}
	out := []data.Revocation{}
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		var r data.Revocation
		if err := json.Unmarshal(byID[id], &r); err != nil {
			return nil, fmt.Errorf("list revoked: grant %q: %w", id, err)
		}
		if !r.LastIssuedAt.Before(since) {
			out = append(out, r)
		}
	}
	return out, nil
}
