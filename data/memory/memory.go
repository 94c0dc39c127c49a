package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"oauthd/data"
)

// ErrClosed is returned by every method called after [Store.Close].
var ErrClosed = errors.New("memory store is closed")

var _ data.Store = (*Store)(nil)

type grantKey struct {
	userID   int64
	clientID string
}

// Store is an in-memory [data.Store]. The zero value is not usable; call [New].
type Store struct {
	mu     sync.Mutex
	closed bool

	nextUserID int64
	users      map[int64]data.User
	byEmail    map[string]int64 // lower-cased email → ID
	byUsername map[string]int64 // lower-cased username → ID
	byExternal map[string]int64 // external ID → ID

	clients  map[string]data.Client
	agents   map[string]data.AgentHost // host → review
	codes    map[string]data.AuthCode  // string(hash) → code
	families map[string]data.Family
	grants   map[grantKey]data.Grant
	sessions map[string]data.Session // string(hash) → session
	nonces   map[string]time.Time    // string(key) → expiry
	keys     []data.SigningKey
	revoked  map[string]data.Revocation // grant ID → tombstone
	devices  map[string]data.DeviceCode // user code → device code
}

// New returns an empty store.
func New() *Store {
	return &Store{
		nextUserID: 1,
		users:      make(map[int64]data.User),
		byEmail:    make(map[string]int64),
		byUsername: make(map[string]int64),
		byExternal: make(map[string]int64),
		clients:    make(map[string]data.Client),
		agents:     make(map[string]data.AgentHost),
		codes:      make(map[string]data.AuthCode),
		families:   make(map[string]data.Family),
		grants:     make(map[grantKey]data.Grant),
		sessions:   make(map[string]data.Session),
		nonces:     make(map[string]time.Time),
		devices:    make(map[string]data.DeviceCode),
	}
}

// lock checks ctx and the closed flag and takes the mutex. On success the
// caller must unlock.
func (s *Store) lock(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("%s: %w: %w", op, data.ErrUnavailable, ErrClosed)
	}
	return nil
}

// Close empties the store; later calls fail with [ErrClosed].
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.users, s.clients, s.codes, s.families, s.grants, s.sessions, s.keys, s.nonces = nil, nil, nil, nil, nil, nil, nil, nil
	return nil
}

// Users.

// Clients.

// Authorization codes.

// Refresh-token families.

// Consent grants.

// Sessions.

// Signing keys.
