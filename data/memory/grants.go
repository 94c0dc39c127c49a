package memory

import (
	"cmp"
	"context"
	"fmt"
	"oauthd/data"
	"slices"
)

// RevokeApp implements [data.Store.RevokeApp] under the store's lock.
func (s *Store) RevokeApp(ctx context.Context, userID int64, clientID string) (data.AppRevocation, error) {
	if err := s.lock(ctx, "revoke app"); err != nil {
		return data.AppRevocation{}, err
	}
	defer s.mu.Unlock()
	var r data.AppRevocation
	for k, c := range s.codes {
		if c.UserID == userID && c.ClientID == clientID {
			delete(s.codes, k)
			r.Codes++
		}
	}
	for _, f := range s.families {
		if f.UserID == userID && f.ClientID == clientID {
			s.revoke(f)
			r.Families = append(r.Families, f.ID)
		}
	}
	slices.Sort(r.Families)
	k := grantKey{userID, clientID}
	if _, ok := s.grants[k]; ok {
		delete(s.grants, k)
		r.Grant = true
	}
	return r, nil
}

// PutGrant implements [data.Store.PutGrant]: it creates or replaces the grant
// of g.UserID to g.ClientID.
func (s *Store) PutGrant(ctx context.Context, g data.Grant) error {
	if err := s.lock(ctx, "put grant"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.disabled(g.UserID) {
		return fmt.Errorf("put grant: user %d: %w", g.UserID, data.ErrUserDisabled)
	}
	s.grants[grantKey{g.UserID, g.ClientID}] = data.Normalize(g)
	return nil
}

// GetGrant implements [data.Store.GetGrant].
func (s *Store) GetGrant(ctx context.Context, userID int64, clientID string) (data.Grant, error) {
	if err := s.lock(ctx, "get grant"); err != nil {
		return data.Grant{}, err
	}
	defer s.mu.Unlock()
	g, ok := s.grants[grantKey{userID, clientID}]
	if !ok {
		return data.Grant{}, fmt.Errorf("get grant of user %d to %q: %w", userID, clientID, data.ErrNotFound)
	}
	return data.Normalize(g), nil
}

// ListGrants implements [data.Store.ListGrants], ordered by client ID.
func (s *Store) ListGrants(ctx context.Context, userID int64) ([]data.Grant, error) {
	if err := s.lock(ctx, "list grants"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []data.Grant{}
	for k, g := range s.grants {
		if k.userID == userID {
			out = append(out, data.Normalize(g))
		}
	}
	slices.SortFunc(out, func(a, b data.Grant) int { return cmp.Compare(a.ClientID, b.ClientID) })
	return out, nil
}

// DeleteGrant implements [data.Store.DeleteGrant].
func (s *Store) DeleteGrant(ctx context.Context, userID int64, clientID string) error {
	if err := s.lock(ctx, "delete grant"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	k := grantKey{userID, clientID}
	if _, ok := s.grants[k]; !ok {
		return fmt.Errorf("delete grant of user %d to %q: %w", userID, clientID, data.ErrNotFound)
	}
	delete(s.grants, k)
	return nil
}
