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

// putFamily stores the new family f and its index entries.
func putFamily(put putFunc, f data.Family) error {
	if err := put(hotFamilies, []byte(f.ID), appendFamily(make([]byte, 0, 256), &f)); err != nil {
		return err
	}
	if err := put(hotFamByClient, familyIndexKey(f.ClientID, f.ID), nil); err != nil {
		return err
	}
	if err := putExpiry(put, familyExpiry(&f), hotFamilies, []byte(f.ID)); err != nil {
		return err
	}
	return put(hotFamByUser, familyUserKey(f.UserID, f.ClientID, f.ID), nil)
}

// deleteFamily removes f and its index entries (its expiry entry goes
// stale: expiry.go), and stores its tombstone.
func deleteFamily(w *wal.Tx, f data.Family) error {
	if err := putRevocation(w.Put, f); err != nil {
		return err
	}
	w.Delete(hotFamilies, []byte(f.ID))
	w.Delete(hotFamByClient, familyIndexKey(f.ClientID, f.ID))
	w.Delete(hotFamByUser, familyUserKey(f.UserID, f.ClientID, f.ID))
	return nil
}

// putRevocation stores the tombstone of f and its expiry entry through
// put (a hot write's, or boltPut's).
func putRevocation(put putFunc, f data.Family) error {
	r := data.RevocationOf(f)
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := put(hotRevoked, []byte(f.ID), raw); err != nil {
		return err
	}
	return putExpiry(put, r.LastIssuedAt.Add(data.RevocationKeep), hotRevoked, []byte(f.ID))
}

// dropFamilyIndexes deletes f's entries in the by-client and by-user
// indexes of the bbolt file (an exclusive op deleting f).
func dropFamilyIndexes(tx *bbolt.Tx, f *data.Family) error {
	if err := tx.Bucket(bucketFamByUser).Delete(familyUserKey(f.UserID, f.ClientID, f.ID)); err != nil {
		return err
	}
	return tx.Bucket(bucketFamByClient).Delete(familyIndexKey(f.ClientID, f.ID))
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
		clientID, oldExp := old.ClientID, familyExpiry(&old)
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
		if exp := familyExpiry(&next); exp.Before(oldExp) {
			// Rare (a rotation extends the expiry): the entry at or
			// before the old expiry may be after the new one.
			if err := putExpiry(w.Put, exp, hotFamilies, key); err != nil {
				return err
			}
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

// Sessions.

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
