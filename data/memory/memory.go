package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"oauthd/data"
	"oauthd/data/ident"
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
	codes    map[string]data.AuthCode // string(hash) → code
	families map[string]data.Family
	grants   map[grantKey]data.Grant
	sessions map[string]data.Session // string(hash) → session
	nonces   map[string]time.Time    // string(key) → expiry
	keys     []data.SigningKey
	revoked  map[string]data.Revocation // grant ID → tombstone
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
		codes:      make(map[string]data.AuthCode),
		families:   make(map[string]data.Family),
		grants:     make(map[grantKey]data.Grant),
		sessions:   make(map[string]data.Session),
		nonces:     make(map[string]time.Time),
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

// Clients.

// CreateClient implements [data.Store.CreateClient].
func (s *Store) CreateClient(ctx context.Context, c data.Client) error {
	if err := s.lock(ctx, "create client"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := data.ValidateClient(c); err != nil {
		return fmt.Errorf("create client %q: %w", c.ID, err)
	}
	if _, ok := s.clients[c.ID]; ok {
		return fmt.Errorf("create client %q: %w", c.ID, data.ErrExists)
	}
	s.clients[c.ID] = data.Normalize(c)
	return nil
}

// GetClient implements [data.Store.GetClient].
func (s *Store) GetClient(ctx context.Context, id string) (data.Client, error) {
	if err := s.lock(ctx, "get client"); err != nil {
		return data.Client{}, err
	}
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return data.Client{}, fmt.Errorf("get client %q: %w", id, data.ErrNotFound)
	}
	return data.Normalize(c), nil
}

// ListClients implements [data.Store.ListClients], ordered by ID.
func (s *Store) ListClients(ctx context.Context, status data.ClientStatus) ([]data.Client, error) {
	if err := s.lock(ctx, "list clients"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []data.Client{}
	for _, id := range slices.Sorted(maps.Keys(s.clients)) {
		if c := s.clients[id]; status == "" || c.Status == status {
			out = append(out, data.Normalize(c))
		}
	}
	return out, nil
}

// UpdateClient implements [data.Store.UpdateClient].
func (s *Store) UpdateClient(ctx context.Context, id string, update func(data.Client) (data.Client, error)) (data.Client, error) {
	if err := s.lock(ctx, "update client"); err != nil {
		return data.Client{}, err
	}
	defer s.mu.Unlock()
	old, ok := s.clients[id]
	if !ok {
		return data.Client{}, fmt.Errorf("update client %q: %w", id, data.ErrNotFound)
	}
	next, err := update(data.Normalize(old))
	if err != nil {
		return data.Client{}, err
	}
	if err := data.ValidateClient(next); err != nil {
		return data.Client{}, fmt.Errorf("update client %q: %w", id, err)
	}
	if err := data.ValidateClientChange(old, next); err != nil {
		return data.Client{}, fmt.Errorf("update client %q: %w", id, err)
	}
	s.clients[id] = data.Normalize(next)
	return data.Normalize(next), nil
}

// Authorization codes.

// CreateAuthCode implements [data.Store.CreateAuthCode].
func (s *Store) CreateAuthCode(ctx context.Context, c data.AuthCode) error {
	if err := s.lock(ctx, "create auth code"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if len(c.Hash) == 0 {
		return fmt.Errorf("create auth code: %w", &data.RuleError{Field: "hash", Reason: "an authorization code needs its hash"})
	}
	if _, ok := s.codes[string(c.Hash)]; ok {
		return fmt.Errorf("create auth code: %w", data.ErrExists)
	}
	if s.disabled(c.UserID) {
		return fmt.Errorf("create auth code: user %d: %w", c.UserID, data.ErrUserDisabled)
	}
	s.codes[string(c.Hash)] = data.Normalize(c)
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

// Refresh-token families.

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

// Consent grants.

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

// UseNonce implements [data.Store.UseNonce].
func (s *Store) UseNonce(ctx context.Context, key []byte, expires time.Time) error {
	if err := s.lock(ctx, "use nonce"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if len(key) == 0 {
		return fmt.Errorf("use nonce: %w", &data.RuleError{Field: "key", Reason: "a nonce needs its key"})
	}
	if _, ok := s.nonces[string(key)]; ok {
		return fmt.Errorf("use nonce: %w", data.ErrExists)
	}
	s.nonces[string(key)] = expires
	return nil
}

// NonceUsed implements [data.Store.NonceUsed].
func (s *Store) NonceUsed(ctx context.Context, key []byte) (bool, error) {
	if err := s.lock(ctx, "nonce used"); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	_, ok := s.nonces[string(key)]
	return ok, nil
}

// Sessions.

// CreateSession implements [data.Store.CreateSession].
func (s *Store) CreateSession(ctx context.Context, sess data.Session) error {
	if err := s.lock(ctx, "create session"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if len(sess.Hash) == 0 {
		return fmt.Errorf("create session: %w", &data.RuleError{Field: "hash", Reason: "a session needs its hash"})
	}
	if _, ok := s.sessions[string(sess.Hash)]; ok {
		return fmt.Errorf("create session: %w", data.ErrExists)
	}
	if s.disabled(sess.UserID) {
		return fmt.Errorf("create session: user %d: %w", sess.UserID, data.ErrUserDisabled)
	}
	s.sessions[string(sess.Hash)] = data.Normalize(sess)
	return nil
}

// GetSession implements [data.Store.GetSession].
func (s *Store) GetSession(ctx context.Context, hash []byte) (data.Session, error) {
	if err := s.lock(ctx, "get session"); err != nil {
		return data.Session{}, err
	}
	defer s.mu.Unlock()
	sess, ok := s.sessions[string(hash)]
	if !ok {
		return data.Session{}, fmt.Errorf("get session: %w", data.ErrNotFound)
	}
	return data.Normalize(sess), nil
}

// DeleteSession implements [data.Store.DeleteSession].
func (s *Store) DeleteSession(ctx context.Context, hash []byte) error {
	if err := s.lock(ctx, "delete session"); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.sessions[string(hash)]; !ok {
		return fmt.Errorf("delete session: %w", data.ErrNotFound)
	}
	delete(s.sessions, string(hash))
	return nil
}

// Signing keys.

// ListKeys implements [data.Store.ListKeys].
func (s *Store) ListKeys(ctx context.Context) ([]data.SigningKey, error) {
	if err := s.lock(ctx, "list keys"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return data.Normalize(s.keys), nil
}

// UpdateKeys implements [data.Store.UpdateKeys]. The new set must pass
// [data.ValidateKeySet].
func (s *Store) UpdateKeys(ctx context.Context, update func([]data.SigningKey) ([]data.SigningKey, error)) ([]data.SigningKey, error) {
	if err := s.lock(ctx, "update keys"); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	next, err := update(data.Normalize(s.keys))
	if err != nil {
		return nil, err
	}
	if err := data.ValidateKeySet(next); err != nil {
		return nil, fmt.Errorf("update keys: %w", err)
	}
	s.keys = data.Normalize(next)
	return data.Normalize(next), nil
}

// GarbageCollect implements [data.Store.GarbageCollect].
func (s *Store) GarbageCollect(ctx context.Context, now time.Time) (data.GCResult, error) {
	if err := s.lock(ctx, "garbage collect"); err != nil {
		return data.GCResult{}, err
	}
	defer s.mu.Unlock()
	var r data.GCResult
	for k, c := range s.codes {
		if c.ExpiresAt.Before(now) {
			delete(s.codes, k)
			r.AuthCodes++
		}
	}
	for k, f := range s.families {
		if familyExpired(f, now) {
			delete(s.families, k)
			r.Families++
		}
	}
	for k, sess := range s.sessions {
		if sess.ExpiresAt.Before(now) {
			delete(s.sessions, k)
			r.Sessions++
		}
	}
	for k, exp := range s.nonces {
		if exp.Before(now) {
			delete(s.nonces, k)
			r.Nonces++
		}
	}
	for k, rev := range s.revoked {
		if rev.LastIssuedAt.Add(data.RevocationKeep).Before(now) {
			delete(s.revoked, k)
			r.Revocations++
		}
	}
	return r, nil
}

// familyExpired reports whether the family's idle or absolute expiry is
// before now. A zero AbsoluteExp means no absolute expiry.
func familyExpired(f data.Family, now time.Time) bool {
	return f.ExpiresAt.Before(now) || (!f.AbsoluteExp.IsZero() && f.AbsoluteExp.Before(now))
}
