package memory

import (
	"context"
	"fmt"
	"maps"
	"oauthd/data"
	"oauthd/data/ident"
	"slices"
)

// CreateUser implements [data.Store.CreateUser].
func (s *Store) CreateUser(ctx context.Context, u data.User) (data.User, error) {
	us, err := s.CreateUsers(ctx, []data.User{u})
	if err != nil {
		return data.User{}, err
	}
	return us[0], nil
}

// CreateUsers implements [data.Store.CreateUsers]: every check first,
// then every write.
func (s *Store) CreateUsers(ctx context.Context, us []data.User) ([]data.User, error) {
	if err := s.lock(ctx, "create users"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	email, name, ext := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i, u := range us {
		e, n := data.UserKeys(u)
		if _, ok := s.byEmail[e]; (ok || email[e]) && e != "" {
			return nil, fmt.Errorf("create user %d: email %q: %w", i+1, u.Email, data.ErrExists)
		}
		if _, ok := s.byUsername[n]; (ok || name[n]) && n != "" {
			return nil, fmt.Errorf("create user %d: username %q: %w", i+1, u.Username, data.ErrExists)
		}
		if _, ok := s.byExternal[u.ExternalID]; (ok || ext[u.ExternalID]) && u.ExternalID != "" {
			return nil, fmt.Errorf("create user %d: external ID %q: %w", i+1, u.ExternalID, data.ErrExists)
		}
		email[e], name[n], ext[u.ExternalID] = true, true, true
	}
	out := make([]data.User, len(us))
	for i, u := range us {
		u = data.Normalize(u)
		u.ID = s.nextUserID
		s.nextUserID++
		s.index(u)
		out[i] = data.Normalize(u)
	}
	return out, nil
}

// index stores u and its index entries (data.UserKeys).
func (s *Store) index(u data.User) {
	s.users[u.ID] = u
	e, n := data.UserKeys(u)
	if e != "" {
		s.byEmail[e] = u.ID
	}
	if n != "" {
		s.byUsername[n] = u.ID
	}
	if u.ExternalID != "" {
		s.byExternal[u.ExternalID] = u.ID
	}
}

// unindex removes u's index entries.
func (s *Store) unindex(u data.User) {
	e, n := data.UserKeys(u)
	delete(s.byEmail, e)
	delete(s.byUsername, n)
	delete(s.byExternal, u.ExternalID)
}

// GetUserByExternalID implements [data.Store.GetUserByExternalID].
func (s *Store) GetUserByExternalID(ctx context.Context, id string) (data.User, error) {
	if err := s.lock(ctx, "get user by external ID"); err != nil {
		return data.User{}, err
	}
	defer s.mu.Unlock()
	uid, ok := s.byExternal[id]
	if !ok || id == "" {
		return data.User{}, fmt.Errorf("get user by external ID %q: %w", id, data.ErrNotFound)
	}
	return data.Normalize(s.users[uid]), nil
}

// UpdateUser implements [data.Store.UpdateUser].
func (s *Store) UpdateUser(ctx context.Context, id int64, update func(data.User) (data.User, error)) (data.User, error) {
	if err := s.lock(ctx, "update user"); err != nil {
		return data.User{}, err
	}
	defer s.mu.Unlock()
	old, ok := s.users[id]
	if !ok {
		return data.User{}, fmt.Errorf("update user %d: %w", id, data.ErrNotFound)
	}
	next, err := update(data.Normalize(old))
	if err != nil {
		return data.User{}, err
	}
	if next.ID != id {
		return data.User{}, fmt.Errorf("update user %d: %w", id, &data.RuleError{Field: "id", Reason: "an update cannot change the user's ID"})
	}
	ne, nn := data.UserKeys(next)
	if o, ok := s.byEmail[ne]; ok && o != id && ne != "" {
		return data.User{}, fmt.Errorf("update user %d: email %q: %w", id, next.Email, data.ErrExists)
	}
	if o, ok := s.byUsername[nn]; ok && o != id && nn != "" {
		return data.User{}, fmt.Errorf("update user %d: username %q: %w", id, next.Username, data.ErrExists)
	}
	if o, ok := s.byExternal[next.ExternalID]; ok && o != id && next.ExternalID != "" {
		return data.User{}, fmt.Errorf("update user %d: external ID %q: %w", id, next.ExternalID, data.ErrExists)
	}
	s.unindex(old)
	next = data.Normalize(next)
	s.index(next)
	if next.Disabled && !old.Disabled {
		s.revokeUser(id)
	}
	return data.Normalize(next), nil
}

// revokeUser deletes every session, code, family and grant of the user.
func (s *Store) revokeUser(id int64) {
	for k, v := range s.sessions {
		if v.UserID == id {
			delete(s.sessions, k)
		}
	}
	for k, v := range s.codes {
		if v.UserID == id {
			delete(s.codes, k)
		}
	}
	for _, v := range s.families {
		if v.UserID == id {
			s.revoke(v) // with its tombstone, for the revoked-grants feed
		}
	}
	for k := range s.grants {
		if k.userID == id {
			delete(s.grants, k)
		}
	}
}

// disabled reports whether the user id exists and is disabled.
func (s *Store) disabled(id int64) bool { return s.users[id].Disabled }

// GetUser implements [data.Store.GetUser].
func (s *Store) GetUser(ctx context.Context, id int64) (data.User, error) {
	if err := s.lock(ctx, "get user"); err != nil {
		return data.User{}, err
	}
	defer s.mu.Unlock()
	u, ok := s.users[id]
	if !ok {
		return data.User{}, fmt.Errorf("get user %d: %w", id, data.ErrNotFound)
	}
	return data.Normalize(u), nil
}

// GetUserByLogin implements [data.Store.GetUserByLogin]: it looks the login
// up as an email first, then as a username.
func (s *Store) GetUserByLogin(ctx context.Context, login string) (data.User, error) {
	if err := s.lock(ctx, "get user by login"); err != nil {
		return data.User{}, err
	}
	defer s.mu.Unlock()
	l := ident.Key(login)
	id, ok := s.byEmail[l]
	if !ok {
		id, ok = s.byUsername[l]
	}
	if !ok || l == "" {
		return data.User{}, fmt.Errorf("get user by login: %w", data.ErrNotFound)
	}
	return data.Normalize(s.users[id]), nil
}

// ListUsers implements [data.Store.ListUsers], ordered by ID.
func (s *Store) ListUsers(ctx context.Context) ([]data.User, error) {
	if err := s.lock(ctx, "list users"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]data.User, 0, len(s.users))
	for _, id := range slices.Sorted(maps.Keys(s.users)) {
		out = append(out, data.Normalize(s.users[id]))
	}
	return out, nil
}
