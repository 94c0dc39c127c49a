package bolt

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	bbolt "go.etcd.io/bbolt"

	"oauthd/data"
)

// CreateUser implements [data.Store.CreateUser].
func (s *Store) CreateUser(ctx context.Context, u data.User) (data.User, error) {
	utcUser(&u)
	err := s.update(ctx, "create user", func(tx *bbolt.Tx) error {
		users, byEmail, byName := tx.Bucket(bucketUsers), tx.Bucket(bucketUserEmail), tx.Bucket(bucketUserName)
		email, name := []byte(strings.ToLower(u.Email)), []byte(strings.ToLower(u.Username))
		if len(email) > 0 && byEmail.Get(email) != nil {
			return fmt.Errorf("create user: email %q: %w", u.Email, data.ErrExists)
		}
		if len(name) > 0 && byName.Get(name) != nil {
			return fmt.Errorf("create user: username %q: %w", u.Username, data.ErrExists)
		}
		seq, err := users.NextSequence()
		if err != nil {
			return err
		}
		u.ID = int64(seq)
		id := itob(u.ID)
		if err := put(users, id, u); err != nil {
			return err
		}
		if len(email) > 0 {
			if err := byEmail.Put(email, id); err != nil {
				return err
			}
		}
		if len(name) > 0 {
			return byName.Put(name, id)
		}
		return nil
	})
	if err != nil {
		return data.User{}, err
	}
	return u, nil
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
		l := []byte(strings.ToLower(login))
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
