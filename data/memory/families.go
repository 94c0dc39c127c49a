package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"oauthd/data"
	"slices"
	"time"
)

// GetFamily implements [data.Store.GetFamily].
func (s *Store) GetFamily(ctx context.Context, id string) (data.Family, error) {
	if err := s.lock(ctx, "get family"); err != nil {
		return data.Family{}, err
	}
	defer s.mu.Unlock()
	f, ok := s.families[id]
	if !ok {
		return data.Family{}, fmt.Errorf("get family %q: %w", id, data.ErrNotFound)
	}
	return data.Normalize(f), nil
}

// RotateRefreshToken implements [data.Store.RotateRefreshToken]. An error
// from update is returned as it is.
func (s *Store) RotateRefreshToken(ctx context.Context, id string, update func(data.Family) (data.Family, error)) (data.Family, error) {
	if err := s.lock(ctx, "rotate refresh token"); err != nil {
		return data.Family{}, err
	}
	defer s.mu.Unlock()
	old, ok := s.families[id]
	if !ok {
		return data.Family{}, fmt.Errorf("rotate refresh token: family %q: %w", id, data.ErrNotFound)
	}
	next, err := update(data.Normalize(old))
	switch {
	case errors.Is(err, data.ErrTokenReused):
		s.revoke(old)
		return data.Normalize(old), err
	case err != nil:
		return data.Family{}, err
	}
	if next.ID != id || next.ClientID != old.ClientID {
		return data.Family{}, fmt.Errorf("rotate refresh token: %w", &data.RuleError{Field: "family", Reason: "a rotation cannot change the family or client ID"})
	}
	s.families[id] = data.Normalize(next)
	return data.Normalize(next), nil
}

// DeleteFamily implements [data.Store.DeleteFamily].
func (s *Store) DeleteFamily(ctx context.Context, id string) error {
	if err := s.lock(ctx, "delete family"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	f, ok := s.families[id]
	if !ok {
		return fmt.Errorf("delete family %q: %w", id, data.ErrNotFound)
	}
	s.revoke(f)
	return nil
}

// revoke deletes f and stores its tombstone; s.mu is held.
func (s *Store) revoke(f data.Family) {
	delete(s.families, f.ID)
	if s.revoked == nil {
		s.revoked = make(map[string]data.Revocation)
	}
	s.revoked[f.ID] = data.RevocationOf(f)
}

// ListRevoked implements [data.Store.ListRevoked].
func (s *Store) ListRevoked(ctx context.Context, since time.Time) ([]data.Revocation, error) {
	if err := s.lock(ctx, "list revoked"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []data.Revocation{}
	for _, id := range slices.Sorted(maps.Keys(s.revoked)) {
		if r := s.revoked[id]; !r.LastIssuedAt.Before(since) {
			out = append(out, r)
		}
	}
	return out, nil
}

// ListFamilies implements [data.Store.ListFamilies], ordered by ID.
func (s *Store) ListFamilies(ctx context.Context, clientID string) ([]data.Family, error) {
	if err := s.lock(ctx, "list families"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []data.Family{}
	for _, id := range slices.Sorted(maps.Keys(s.families)) {
		if f := s.families[id]; clientID == "" || f.ClientID == clientID {
			out = append(out, data.Normalize(f))
		}
	}
	return out, nil
}

// ListUserFamilies implements [data.Store.ListUserFamilies], ordered by
// client ID, then ID.
func (s *Store) ListUserFamilies(ctx context.Context, userID int64) ([]data.Family, error) {
	if err := s.lock(ctx, "list user families"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []data.Family{}
	for _, f := range s.families {
		if f.UserID == userID {
			out = append(out, data.Normalize(f))
		}
	}
	slices.SortFunc(out, func(a, b data.Family) int {
		return cmp.Or(cmp.Compare(a.ClientID, b.ClientID), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}
