package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	bbolt "go.etcd.io/bbolt"

	"oauthd/data"
	"oauthd/data/ident"
)

// CreateUser implements [data.Store.CreateUser].
func (s *Store) CreateUser(ctx context.Context, u data.User) (data.User, error) {
	us, err := s.CreateUsers(ctx, []data.User{u})
	if err != nil {
		return data.User{}, err
	}
	return us[0], nil
}

// CreateUsers implements [data.Store.CreateUsers]: one bbolt transaction,
// so a crash leaves all of us or none.
func (s *Store) CreateUsers(ctx context.Context, us []data.User) ([]data.User, error) {
	out := make([]data.User, len(us))
	err := s.update(ctx, "create users", func(tx *bbolt.Tx) error {
		users := tx.Bucket(bucketUsers)
		for i, u := range us {
			u = data.Normalize(u)
			seq, err := users.NextSequence()
			if err != nil {
				return err
			}
			u.ID = int64(seq)
			if err := checkUnique(tx, u, nil); err != nil {
				return fmt.Errorf("create user %d: %w", i+1, err)
			}
			if err := putUser(tx, u); err != nil {
				return err
			}
			out[i] = u
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// userIndex is one of a user's unique index entries.
type userIndex struct {
	b     []byte // the index bucket
	k     string // the key: data.UserKeys, or the external ID
	field string
	value string // as stored, for errors
}

func userIndexes(u data.User) []userIndex {
	ek, nk := data.UserKeys(u)
	return []userIndex{
		{bucketUserEmail, ek, "email", u.Email},
		{bucketUserName, nk, "username", u.Username},
		{bucketUserExt, u.ExternalID, "external ID", u.ExternalID},
	}
}

// checkUnique fails with ErrExists when one of u's keys names a user
// other than u. A key old (u's record before an update; nil for a new
// user) already had is not checked: a user an upgrade left out of an
// index for a clash (data.Clash) can still be updated.
func checkUnique(tx *bbolt.Tx, u data.User, old *data.User) error {
	self := itob(u.ID)
	var had []userIndex
	if old != nil {
		had = userIndexes(*old)
	}
	for i, ix := range userIndexes(u) {
		if ix.k == "" || (had != nil && had[i].k == ix.k) {
			continue
		}
		if id := tx.Bucket(ix.b).Get([]byte(ix.k)); id != nil && (old == nil || !bytes.Equal(id, self)) {
			return fmt.Errorf("%s %q: %w", ix.field, ix.value, data.ErrExists)
		}
	}
	return nil
}

// putUser stores u and its index entries (those it has no clash for:
// an entry another user holds is left to them).
func putUser(tx *bbolt.Tx, u data.User) error {
	id := itob(u.ID)
	if err := put(tx.Bucket(bucketUsers), id, u); err != nil {
		return err
	}
	for _, ix := range userIndexes(u) {
		if ix.k == "" {
			continue
		}
		b := tx.Bucket(ix.b)
		if held := b.Get([]byte(ix.k)); held != nil && !bytes.Equal(held, id) {
			continue // an upgrade clash (checkUnique let it through)
		}
		if err := b.Put([]byte(ix.k), id); err != nil {
			return err
		}
	}
	if u.Disabled {
		return tx.Bucket(bucketUserOff).Put(id, []byte{})
	}
	return tx.Bucket(bucketUserOff).Delete(id)
}

// dropUserIndex removes u's index entries that name u.
func dropUserIndex(tx *bbolt.Tx, u data.User) error {
	id := itob(u.ID)
	for _, ix := range userIndexes(u) {
		if ix.k == "" {
			continue
		}
		b := tx.Bucket(ix.b)
		if held := b.Get([]byte(ix.k)); held != nil && bytes.Equal(held, id) {
			if err := b.Delete([]byte(ix.k)); err != nil {
				return err
			}
		}
	}
	return nil
}

// errDisabling makes UpdateUser run again as an exclusive op.
var errDisabling = errors.New("update disables the user")

// UpdateUser implements [data.Store.UpdateUser]. An update that disables
// the user runs as an exclusive op (after a checkpoint, alone with the
// hot writes), so that deleting the user's sessions, codes and families
// and marking the user disabled are one transaction that no hot write can
// interleave with. It scans those buckets: O(records), for a rare call.
func (s *Store) UpdateUser(ctx context.Context, id int64, update func(data.User) (data.User, error)) (data.User, error) {
	var out data.User
	apply := func(exclusive bool) func(tx *bbolt.Tx) error {
		return func(tx *bbolt.Tx) error {
			key := itob(id)
			var old data.User
			ok, err := get(tx.Bucket(bucketUsers), key, &old)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("update user %d: %w", id, data.ErrNotFound)
			}
			next, err := update(old)
			if err != nil {
				return err
			}
			if next.ID != id {
				return fmt.Errorf("update user %d: %w", id, &data.RuleError{Field: "id", Reason: "an update cannot change the user's ID"})
			}
			disabling := next.Disabled && !old.Disabled
			if disabling && !exclusive {
				return errDisabling
			}
			next = data.Normalize(next)
			if err := checkUnique(tx, next, &old); err != nil {
				return fmt.Errorf("update user %d: %w", id, err)
			}
			if err := dropUserIndex(tx, old); err != nil {
				return err
			}
			if err := putUser(tx, next); err != nil {
				return err
			}
			if disabling {
				if err := revokeUser(tx, id); err != nil {
					return fmt.Errorf("update user %d: revoke: %w", id, err)
				}
			}
			out = next
			return nil
		}
	}
	err := s.update(ctx, "update user", apply(false))
	if errors.Is(err, errDisabling) {
		err = s.exclusive(ctx, "disable user", true, apply(true))
	}
	if err != nil {
		return data.User{}, err
	}
	return out, nil
}

// revokeUser deletes, in the bbolt file (after a checkpoint), every
// session, auth code, family and grant of the user.
func revokeUser(tx *bbolt.Tx, id int64) error {
	mine := func(uid int64) bool { return uid == id }
	if _, err := sweep(tx.Bucket(bucketSessions), func(s *data.Session) bool { return mine(s.UserID) }, nil); err != nil {
		return err
	}
	if _, err := sweep(tx.Bucket(bucketCodes), func(c *data.AuthCode) bool { return mine(c.UserID) }, nil); err != nil {
		return err
	}
	if _, err := sweep(tx.Bucket(bucketFamilies), func(f *data.Family) bool { return mine(f.UserID) },
		func(f *data.Family) error {
			// A tombstone for each, as a revocation leaves (the
			// revoked-grants feed).
			if err := putRevocation(boltPut(tx), *f); err != nil {
				return err
			}
			return dropFamilyIndexes(tx, f)
		}); err != nil {
		return err
	}
	grants := tx.Bucket(bucketGrants)
	prefix := itob(id)
	var dead [][]byte
	c := grants.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		dead = append(dead, bytes.Clone(k))
	}
	for _, k := range dead {
		if err := grants.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// userDisabled reports whether the user id is disabled (one index read).
func userDisabled(tx *bbolt.Tx, id int64) bool {
	return tx.Bucket(bucketUserOff).Get(itob(id)) != nil
}

// GetUserByExternalID implements [data.Store.GetUserByExternalID].
func (s *Store) GetUserByExternalID(ctx context.Context, ext string) (data.User, error) {
	var u data.User
	err := s.view(ctx, "get user by external ID", func(tx *bbolt.Tx) error {
		var id []byte
		if ext != "" {
			id = tx.Bucket(bucketUserExt).Get([]byte(ext))
		}
		if id == nil {
			return fmt.Errorf("get user by external ID %q: %w", ext, data.ErrNotFound)
		}
		ok, err := get(tx.Bucket(bucketUsers), id, &u)
		if err == nil && !ok {
			err = fmt.Errorf("get user by external ID %q: index names a missing user: %w", ext, data.ErrNotFound)
		}
		return err
	})
	return u, err
}

// GetUser implements [data.Store.GetUser].
func (s *Store) GetUser(ctx context.Context, id int64) (data.User, error) {
	var u data.User
	err := s.view(ctx, "get user", func(tx *bbolt.Tx) error {
		ok, err := get(tx.Bucket(bucketUsers), itob(id), &u)
		if err == nil && !ok {
			err = fmt.Errorf("get user %d: %w", id, data.ErrNotFound)
		}
		return err
	})
	return u, err
}

// GetUserByLogin implements [data.Store.GetUserByLogin]: it looks the login
// up as an email first, then as a username.
func (s *Store) GetUserByLogin(ctx context.Context, login string) (data.User, error) {
	var u data.User
	err := s.view(ctx, "get user by login", func(tx *bbolt.Tx) error {
		l := []byte(ident.Key(login))
		var id []byte
		if len(l) > 0 {
			if id = tx.Bucket(bucketUserEmail).Get(l); id == nil {
				id = tx.Bucket(bucketUserName).Get(l)
			}
		}
		if id == nil {
			return fmt.Errorf("get user by login: %w", data.ErrNotFound)
		}
		ok, err := get(tx.Bucket(bucketUsers), id, &u)
		if err == nil && !ok {
			err = fmt.Errorf("get user %d: index names a missing user: %w", binary.BigEndian.Uint64(id), data.ErrNotFound)
		}
		return err
	})
	return u, err
}

// ListUsers implements [data.Store.ListUsers], ordered by ID.
func (s *Store) ListUsers(ctx context.Context) ([]data.User, error) {
	var out []data.User
	err := s.view(ctx, "list users", func(tx *bbolt.Tx) error {
		var err error
		out, err = list[data.User](tx.Bucket(bucketUsers), nil, nil)
		return err
	})
	return out, err
}

// list decodes every record of b whose key has prefix and, when keep is not
// nil, for which keep returns true. The result is never nil.
func list[T any](b *bbolt.Bucket, prefix []byte, keep func(*T) bool) ([]T, error) {
	out := []T{}
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && hasPrefix(k, prefix); k, v = c.Next() {
		var rec T
		if err := jsonUnmarshal(v, &rec); err != nil {
			return nil, err
		}
		if keep == nil || keep(&rec) {
			out = append(out, rec)
		}
	}
	return out, nil
}

func hasPrefix(k, prefix []byte) bool { return strings.HasPrefix(string(k), string(prefix)) }
