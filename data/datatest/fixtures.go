package datatest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"oauthd/data"
)

// Fixtures.

func newClient(id string) data.Client {
	return data.Client{
		ID:           id,
		Name:         "Client " + id,
		OwnerID:      1,
		Type:         data.Confidential,
		RedirectURIs: []string{"https://app.example.com/callback", "http://127.0.0.1:8080/cb"},
		Scopes:       []string{"BOOKING_READ", "PROFILE_READ"},
		Status:       data.StatusPending,
		Secrets:      []data.ClientSecret{newSecret("cs_1")},
		CreatedAt:    t0,
		UpdatedAt:    t0,
	}
}

func newSecret(id string) data.ClientSecret {
	return data.ClientSecret{ID: id, Hash: data.Hash(data.NewSecret(data.PrefixClientSecret)), CreatedAt: t0}
}

func newCode(code, clientID string) data.AuthCode {
	return data.AuthCode{
		Hash:          data.AuthCodeKey(code),
		ClientID:      clientID,
		UserID:        1,
		RedirectURI:   "https://app.example.com/callback",
		Scopes:        []string{"BOOKING_READ"},
		CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
		CreatedAt:     t0,
		ExpiresAt:     t0.Add(time.Minute),
	}
}

func newFamily(id, clientID, token string) data.Family {
	return data.Family{
		ID:          id,
		ClientID:    clientID,
		UserID:      1,
		Scopes:      []string{"BOOKING_READ"},
		TokenHash:   data.Hash(token),
		CreatedAt:   t0,
		RotatedAt:   t0,
		ExpiresAt:   t0.Add(24 * time.Hour),
		AbsoluteExp: t0.Add(30 * 24 * time.Hour),
	}
}

// familyFrom is an exchange callback that creates the family id.
func familyFrom(id, token string) func(data.AuthCode) (data.Family, error) {
	return func(c data.AuthCode) (data.Family, error) {
		f := newFamily(id, c.ClientID, token)
		f.CodeHash = c.Hash
		return f, nil
	}
}

// presenting wraps a rotation callback with the check a caller makes when
// token is presented: the family's current token, or else a reuse (which
// has the store delete the family).
func presenting(token string, update func(data.Family) (data.Family, error)) func(data.Family) (data.Family, error) {
	return func(f data.Family) (data.Family, error) {
		if !data.Equal(f.TokenHash, data.Hash(token)) {
			return data.Family{}, fmt.Errorf("family %s: %w", f.ID, data.ErrTokenReused)
		}
		return update(f)
	}
}

// rotateTo is a rotation callback that installs the hash of token.
func rotateTo(token string, now time.Time) func(data.Family) (data.Family, error) {
	return func(f data.Family) (data.Family, error) {
		f.TokenHash = data.Hash(token)
		f.Generation++
		f.RotatedAt = now
		f.ExpiresAt = now.Add(24 * time.Hour)
		return f, nil
	}
}

func mustEqual[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s = %+v; want %+v", what, got, want)
	}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("%s: unexpected error %v", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: error = %v; want errors.Is(err, %v)", what, err, want)
	}
}

var ctx = context.Background()

// raceOutcomes checks that every error of a concurrent race is nil or one
// of allowed (tested with errors.Is), and returns how many calls succeeded.
func raceOutcomes(t *testing.T, op string, errs []error, allowed ...error) (ok int) {
	t.Helper()
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		if !slices.ContainsFunc(allowed, func(a error) bool { return errors.Is(err, a) }) {
			t.Fatalf("%s: %v; want nil or one of %v", op, err, allowed)
		}
	}
	return ok
}
