package memory

import (
	"context"
	"fmt"
	"oauthd/data"
)

// CreateAuthCode implements [data.Store.CreateAuthCode].
func (s *Store) CreateAuthCode(ctx context.Context, c data.AuthCode) error {
	if err := s.lock(ctx, "create auth code"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return s.createCode(c)
}

// CreateConsentedCode implements [data.Store.CreateConsentedCode] under
// the store's lock.
func (s *Store) CreateConsentedCode(ctx context.Context, c data.AuthCode, check func(data.Client, data.Grant, bool) error) error {
	if err := s.lock(ctx, "create consented code"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := data.ValidateAuthCode(c); err != nil {
		return fmt.Errorf("create consented code: %w", err)
	}
	cl, ok := s.clients[c.ClientID]
	if !ok {
		return fmt.Errorf("create consented code: client %q: %w", c.ClientID, data.ErrNotFound)
	}
	if s.disabled(c.UserID) {
		return fmt.Errorf("create consented code: user %d: %w", c.UserID, data.ErrUserDisabled)
	}
	g, found := s.grants[grantKey{c.UserID, c.ClientID}]
	if err := check(data.Normalize(cl), data.Normalize(g), found); err != nil {
		return err
	}
	return s.createCode(c)
}

// createCode stores c; the caller holds the lock.
func (s *Store) createCode(c data.AuthCode) error {
	if err := data.ValidateAuthCode(c); err != nil {
		return fmt.Errorf("create auth code: %w", err)
	}
	return createHot(s, "create auth code", s.codes, c.Hash, c.UserID, data.Normalize(c))
}

// createHot stores v under key in m, the record of a user's sign-in
// (code or session): refused with data.ErrExists when the key is taken,
// data.ErrUserDisabled when the user is disabled. The caller holds the
// lock.
func createHot[T any](s *Store, op string, m map[string]T, key []byte, userID int64, v T) error {
	if _, ok := m[string(key)]; ok {
		return fmt.Errorf("%s: %w", op, data.ErrExists)
	}
	if s.disabled(userID) {
		return fmt.Errorf("%s: user %d: %w", op, userID, data.ErrUserDisabled)
	}
	m[string(key)] = v
	return nil
}

// ExchangeAuthCode implements [data.Store.ExchangeAuthCode]. An error from
// exchange is returned as it is.
func (s *Store) ExchangeAuthCode(ctx context.Context, hash []byte, exchange func(data.AuthCode) (data.Family, error)) (data.AuthCode, data.Family, error) {
	if err := s.lock(ctx, "exchange auth code"); err != nil {
		return data.AuthCode{}, data.Family{}, err
	}
	defer s.mu.Unlock()
	code, ok := s.codes[string(hash)]
	if !ok {
		return data.AuthCode{}, data.Family{}, fmt.Errorf("exchange auth code: %w", data.ErrNotFound)
	}
	if code.Used {
		return data.Normalize(code), data.Family{}, fmt.Errorf("exchange auth code: %w", data.ErrCodeUsed)
	}
	fam, err := exchange(data.Normalize(code))
	if err != nil {
		return data.AuthCode{}, data.Family{}, err
	}
	if fam.ID == "" {
		return data.AuthCode{}, data.Family{}, fmt.Errorf("exchange auth code: %w", &data.RuleError{Field: "family_id", Reason: "the new family needs an ID"})
	}
	if _, ok := s.families[fam.ID]; ok {
		return data.AuthCode{}, data.Family{}, fmt.Errorf("exchange auth code: family %q: %w", fam.ID, data.ErrExists)
	}
	code.Used = true
	code.FamilyID = fam.ID
	s.codes[string(hash)] = code
	s.families[fam.ID] = data.Normalize(fam)
	return data.Normalize(code), data.Normalize(fam), nil
}
