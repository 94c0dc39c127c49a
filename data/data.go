package data

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Sentinel errors returned by every [Store]. Backends wrap them with the
// operation (fmt.Errorf("get client %q: %w", id, ErrNotFound)); callers test
// them with errors.Is.
var (
	// ErrNotFound: no record under that key.
	ErrNotFound = errors.New("not found")
	// ErrExists: a record with that key (or unique field) already exists.
	ErrExists = errors.New("already exists")
	// ErrInvalid: the record breaks a rule of the seed (see [ValidateClient]).
	// It is wrapped in a *[RuleError] that says which rule.
	ErrInvalid = errors.New("invalid record")
	// ErrTooManySecrets: the client already has [MaxActiveSecrets] secrets.
	ErrTooManySecrets = errors.New("client already has 2 active secrets")
	// ErrLastSecret: revoking would leave a confidential client without a secret.
	ErrLastSecret = errors.New("a confidential client must keep at least one active secret")
	// ErrCodeUsed: the authorization code was already exchanged. The returned
	// AuthCode names the refresh-token family issued from it.
	ErrCodeUsed = errors.New("authorization code already used")
	// ErrTokenReused: a refresh token the family issued earlier was
	// presented again (RFC 9700 §4.14.2); the whole family is revoked.
	// An update function of [Store.RotateRefreshToken] returns it to have
	// the store delete the family.
	ErrTokenReused = errors.New("refresh token reused; family revoked")
	// ErrConflict: the update lost a race it cannot merge (e.g. a state
	// transition from a state the record is no longer in).
	ErrConflict = errors.New("conflict")
	// ErrUserDisabled: the user is disabled ([User.Disabled]); nothing new
	// (session, authorization code, consent grant) is stored for them.
	ErrUserDisabled = errors.New("user is disabled")
	// ErrUnavailable: the store cannot be reached or cannot serve now
	// (PostgreSQL down, restarting or refusing connections; a bbolt
	// store closed, or failed after a write error). The operation may
	// succeed later: servers answer 503 with Retry-After, never 500.
	// Backends wrap it around the cause, in one place each
	// (data/postgres: classify; data/bolt: unavailable).
	ErrUnavailable = errors.New("the database is unavailable")
)

// Limits from the seed.
const (
	MaxRedirectURIs  = 10
	MaxActiveSecrets = 2
)

// User is a platform user who can log in and consent.
type User struct {
	ID           int64     `json:"id"`
	Email        string    `json:"email"`    // unique under its canonical form, ident.Key
	Username     string    `json:"username"` // unique under ident.Key; "" for none
	Name         string    `json:"name"`
	TimeZone     string    `json:"time_zone"`     // IANA name, e.g. Europe/Berlin
	PasswordHash string    `json:"password_hash"` // PHC or modular-crypt string; never logged
	CreatedAt    time.Time `json:"created_at"`
	// ExternalID is the user's ID at the platform that logs them in
	// (the `sub` of its login assertion, docs/LOGIN-HANDOVER.md); unique
	// when not "". "" for a user made by `users add` or `users import`.
	ExternalID string `json:"external_id,omitempty"`
	// Disabled: the user cannot log in or consent, and the store keeps
	// no session, code, family or grant of theirs (see [Store.UpdateUser]).
	Disabled   bool      `json:"disabled,omitempty"`
	DisabledAt time.Time `json:"disabled_at,omitzero"`
	// ProfileUpdatedAt is when the email, name or time zone last changed
	// (the login handover's sync); zero when they have not changed since
	// CreatedAt. OpenID Connect's updated_at ([User.ProfileUpdated]).
	ProfileUpdatedAt time.Time `json:"profile_updated_at,omitzero"`
}

// ProfileUpdated returns when the user's profile last changed:
// ProfileUpdatedAt, or CreatedAt when it never did.
func (u User) ProfileUpdated() time.Time {
	if u.ProfileUpdatedAt.IsZero() {
		return u.CreatedAt
	}
	return u.ProfileUpdatedAt
}

// ClientStatus is the review state of a client.
type ClientStatus string

// Client review states: pending → approved | rejected.
const (
	StatusPending  ClientStatus = "pending"
	StatusApproved ClientStatus = "approved"
	StatusRejected ClientStatus = "rejected"
)

// ClientType is the RFC 6749 §2.1 client type.
type ClientType string

// Client types.
const (
	Confidential ClientType = "confidential"
	Public       ClientType = "public"
)

// ClientSecret is one client secret. Only its SHA-256 hash is stored.
type ClientSecret struct {
	ID         string    `json:"id"`   // public identifier, "cs_…"
	Hash       []byte    `json:"hash"` // SHA-256 of the secret
	CreatedAt  time.Time `json:"created_at"`
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
}

// UsageDay counts, for a legacy client, the authorization requests of one
// UTC day that came with and without a scope parameter.
type UsageDay struct {
	Day          string `json:"day"` // YYYY-MM-DD, UTC
	WithScope    int64  `json:"with_scope"`
	WithoutScope int64  `json:"without_scope"`
}

// MaxUsageDays is how many days of [UsageDay] a client keeps.
const MaxUsageDays = 30

// Client is a registered OAuth client.
type Client struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// OwnerID is the ID of the user who owns the client (the developer
	// who manages it in the settings pages). A client belongs to a user,
	// never to an email: whatever happens to the user's email later, the
	// client stays theirs. 0 only for an unclaimed client.
	OwnerID int64 `json:"owner_id,omitempty"`
	// UnclaimedOwner is, for a client whose owner named no user when it
	// was made or upgraded (a legacy client's "owner" in `clients import`,
	// an owner email of an earlier release that matched no user), that
	// owner as given, for the operator to see; "" when OwnerID is set. No
	// user is ever matched to it: only the operator can give the client
	// an owner.
	UnclaimedOwner string       `json:"unclaimed_owner,omitempty"`
	Type           ClientType   `json:"type"`
	RedirectURIs   []string     `json:"redirect_uris"`
	Scopes         []string     `json:"scopes"` // empty only for a legacy client
	Legacy         bool         `json:"legacy"` // made before scopes existed; unrestricted until scopes are saved
	Status         ClientStatus `json:"status"`
	RejectReason   string       `json:"reject_reason,omitempty"`
	// Secrets are the active secrets (revoked ones are removed at once).
	Secrets []ClientSecret `json:"secrets,omitempty"`
	Usage   []UsageDay     `json:"usage,omitempty"` // legacy clients only, newest last
	// Pending is the owner's change that widens the client, waiting for an
	// administrator; nil when there is none. Nothing but the review reads
	// it: the client works with the settings above until it is approved.
	Pending *ClientChange `json:"pending,omitempty"`
	// RejectedChange is the owner's last change an administrator rejected
	// (with its RejectReason), kept to tell the owner until their next
	// edit; nil when there is none.
	RejectedChange *ClientChange `json:"rejected_change,omitempty"`
	CreatedAt      time.Time     `json:"created_at"`
	UpdatedAt      time.Time     `json:"updated_at"`
	// DPoPBoundAccessTokens (RFC 9449 §5.2): every token request of the
	// client must carry a DPoP proof, and its tokens are all DPoP-bound.
	DPoPBoundAccessTokens bool `json:"dpop_bound_access_tokens,omitempty"`
	// RequirePAR (RFC 9126 §6): the client's authorization requests must
	// come through the pushed authorization request endpoint.
	RequirePAR bool `json:"require_pushed_authorization_requests,omitempty"`
	// PostLogoutRedirectURIs are where the end-session endpoint may send
	// the browser after signing the user out (OpenID Connect RP-Initiated
	// Logout 1.0 §3.1): matched exactly, like RedirectURIs, at most
	// [MaxRedirectURIs], and a new one waits for review like a new
	// redirect URI ([ClientChange.AddPostLogoutRedirectURIs]).
	PostLogoutRedirectURIs []string `json:"post_logout_redirect_uris,omitempty"`
	// Review is what the stores keep of the client's reviews, for the
	// rule of remembered consents ([ConsentHeld]); only [Reviewed], in
	// every store's UpdateClient, changes it.
	Review ClientReview `json:"review,omitzero"`
	// GrantTypes are the grant types the client may use ([GrantTypes]);
	// nil means [DefaultGrantTypes] (a record made before the field, or a
	// client that asked for none): read them with
	// [Client.AllowedGrantTypes]. A new one waits for review like a new
	// scope ([ClientChange.AddGrantTypes]).
	GrantTypes []string `json:"grant_types,omitempty"`
	// JWKS is the client's public JWK set (RFC 7517 §5, as JSON text) and
	// JWKSURI where it publishes one (https): a client with either
	// authenticates with private_key_jwt (RFC 7523 §2.2, OpenID Connect
	// Core §9) and holds no secret. At most one of them is set.
	JWKS    string `json:"jwks,omitempty"`
	JWKSURI string `json:"jwks_uri,omitempty"`
	// MetadataHost is, for an AI assistant identified by a client ID
	// metadata document (ID is the document's URL), the canonical host
	// that vouches for it ([MetadataClientHost]); "" for every other
	// client. Such a client is public, has no owner, and is stored only
	// once a signed-in user consents to it; its redirect URIs and name
	// are the document's, its scopes the host's review ([AgentHost]).
	MetadataHost string `json:"metadata_host,omitempty"`
}

// HasKeys reports whether c authenticates with keys (private_key_jwt)
// instead of a secret.
func (c Client) HasKeys() bool { return c.JWKS != "" || c.JWKSURI != "" }

// ClientChange is the part of a change by a client's owner that widens what
// an approved client can do: scopes and redirect URIs it does not have, or
// the other client type. It waits in [Client.Pending] until an
// administrator approves it ([Client.WithPending] is the client then) or
// rejects it. The part of an owner's change that narrows the client
// (removing a scope or a redirect URI) is applied at once and never waits.
type ClientChange struct {
	AddScopes       []string `json:"add_scopes,omitempty"`
	AddRedirectURIs []string `json:"add_redirect_uris,omitempty"`
	// AddPostLogoutRedirectURIs are post-logout redirect URIs the client
	// does not have ([Client.PostLogoutRedirectURIs]).
	AddPostLogoutRedirectURIs []string `json:"add_post_logout_redirect_uris,omitempty"`
	// AddGrantTypes are grant types the client may not use yet
	// ([Client.AllowedGrantTypes]).
	AddGrantTypes []string `json:"add_grant_types,omitempty"`
	// Type is the client type asked for; "" when the type stays.
	Type ClientType `json:"type,omitempty"`
	// DropDPoPBound and DropRequirePAR turn off the client's
	// [Client.DPoPBoundAccessTokens] and [Client.RequirePAR]: a protection
	// removed widens the client.
	DropDPoPBound  bool `json:"drop_dpop_bound_access_tokens,omitempty"`
	DropRequirePAR bool `json:"drop_require_pushed_authorization_requests,omitempty"`
	// Secret is, for a public client that asked to become confidential, the
	// secret it will have (its hash; the owner saw the secret once, when
	// asking). It is not accepted before the change is approved.
	Secret *ClientSecret `json:"secret,omitempty"`
	// ProposedBy names who asked (e.g. "user 3 (settings page)").
	ProposedBy string    `json:"proposed_by"`
	ProposedAt time.Time `json:"proposed_at"`
	// RejectReason is set only on [Client.RejectedChange].
	RejectReason string `json:"reject_reason,omitempty"`
}

// Clone returns a deep copy of p (nil for nil).
func (p *ClientChange) Clone() *ClientChange {
	if p == nil {
		return nil
	}
	q := *p
	q.AddScopes = slices.Clone(q.AddScopes)
	q.AddRedirectURIs = slices.Clone(q.AddRedirectURIs)
	q.AddPostLogoutRedirectURIs = slices.Clone(q.AddPostLogoutRedirectURIs)
	q.AddGrantTypes = slices.Clone(q.AddGrantTypes)
	if q.Secret != nil {
		s := *q.Secret
		s.Hash = slices.Clone(s.Hash)
		q.Secret = &s
	}
	return &q
}

// Clone returns a deep copy of c: no slice, byte slice or pending change
// of the copy shares memory with c. The one copy of a client record that
// the stores and the client cache make.
func (c Client) Clone() Client {
	c.RedirectURIs = slices.Clone(c.RedirectURIs)
	c.Scopes = slices.Clone(c.Scopes)
	c.PostLogoutRedirectURIs = slices.Clone(c.PostLogoutRedirectURIs)
	c.GrantTypes = slices.Clone(c.GrantTypes)
	c.Usage = slices.Clone(c.Usage)
	if c.Secrets != nil {
		s := make([]ClientSecret, len(c.Secrets))
		for i, cs := range c.Secrets {
			cs.Hash = slices.Clone(cs.Hash)
			s[i] = cs
		}
		c.Secrets = s
	}
	c.Pending = c.Pending.Clone()
	c.RejectedChange = c.RejectedChange.Clone()
	c.Review = c.Review.Clone()
	return c
}

// WithPending returns c as it will be once its pending change is approved
// (with Pending nil), or c itself when it has none.
func (c Client) WithPending() Client {
	p := c.Pending
	if p == nil {
		return c
	}
	c.Pending = nil
	c.Scopes = append(slices.Clone(c.Scopes), p.AddScopes...)
	c.RedirectURIs = append(slices.Clone(c.RedirectURIs), p.AddRedirectURIs...)
	if len(p.AddPostLogoutRedirectURIs) > 0 {
		c.PostLogoutRedirectURIs = append(slices.Clone(c.PostLogoutRedirectURIs), p.AddPostLogoutRedirectURIs...)
	}
	if len(p.AddGrantTypes) > 0 {
		c.GrantTypes = append(slices.Clone(c.AllowedGrantTypes()), p.AddGrantTypes...)
	}
	if p.DropDPoPBound {
		c.DPoPBoundAccessTokens = false
	}
	if p.DropRequirePAR {
		c.RequirePAR = false
	}
	if p.Type != "" && p.Type != c.Type {
		c.Type = p.Type
		c.Secrets = nil
		if p.Secret != nil {
			s := *p.Secret
			s.Hash = slices.Clone(s.Hash)
			c.Secrets = []ClientSecret{s}
		}
	}
	return c
}

// AuthCode is an issued authorization code, keyed by [AuthCodeKey] of the
// code (its time characters and its SHA-256); stores treat Hash as an
// opaque key.
// After the exchange it stays as a tombstone (Used, FamilyID) until it
// expires, so that a replay can revoke what it issued.
type AuthCode struct {
	Hash          []byte    `json:"hash"`
	ClientID      string    `json:"client_id"`
	UserID        int64     `json:"user_id"`
	RedirectURI   string    `json:"redirect_uri"`
	Scopes        []string  `json:"scopes"`
	Unrestricted  bool      `json:"unrestricted"`             // legacy client's grant
	CodeChallenge string    `json:"code_challenge,omitempty"` // S256
	CreatedAt     time.Time `json:"created_at"`
	ExpiresAt     time.Time `json:"expires_at"`
	Used          bool      `json:"used"`
	FamilyID      string    `json:"family_id,omitempty"`
	// Nonce is the OpenID Connect nonce of the authorization request
	// (Core §3.1.2.1), put in the ID token; "" when there was none.
	Nonce string `json:"nonce,omitempty"`
	// AuthTime is when the user last authenticated (OpenID Connect Core
	// §2 auth_time): the session's [Session.AuthTime]. Set only for a
	// code whose scopes include openid; zero otherwise.
	AuthTime time.Time `json:"auth_time,omitzero"`
	// Resources are the RFC 8707 resource indicators of the authorization
	// request: the APIs the user authorized tokens for; nil for none.
	Resources []string `json:"resources,omitempty"`
}

// Expired reports whether c can no longer be exchanged at now (its
// lifetime is over; a used code's tombstone is not expired until then).
// An expired code stays in the store until the next sweep
// ([Store.GarbageCollect]).
func (c AuthCode) Expired(now time.Time) bool { return !now.Before(c.ExpiresAt) }

// Family is a refresh-token family: one user's grant to one client, renewed
// by rotation. Only hashes of its refresh tokens are stored; the token
// itself carries the family ID (and a tag, see [NewRefreshToken]). The
// issuer decides what a presented token is worth (current, the previous
// one within the reuse grace, a genuine replay that revokes the family, or
// a forgery that changes nothing); see [Store.RotateRefreshToken].
type Family struct {
	ID           string    `json:"id"`
	ClientID     string    `json:"client_id"`
	UserID       int64     `json:"user_id"`
	Scopes       []string  `json:"scopes"` // only ever narrowed (the client lost a scope)
	Unrestricted bool      `json:"unrestricted"`
	TokenHash    []byte    `json:"token_hash"` // SHA-256 of the current refresh token
	Generation   uint64    `json:"generation"` // rotations so far
	CreatedAt    time.Time `json:"created_at"` // time of the authorization
	RotatedAt    time.Time `json:"rotated_at"`
	ExpiresAt    time.Time `json:"expires_at"`   // idle expiry, never after AbsoluteExpiresAt
	AbsoluteExp  time.Time `json:"absolute_exp"` // the family's hard end
	CodeHash     []byte    `json:"code_hash,omitempty"`
	// Tagged: the current token carries a tag ([NewRefreshToken]). False
	// only for a family last rotated by a release before tags.
	Tagged bool `json:"tagged,omitempty"`
	// PrevHash is the SHA-256 of the token the current one replaced, while
	// the reuse grace may still accept it once; nil after a grace rotation
	// and before the first rotation.
	PrevHash []byte `json:"prev_hash,omitempty"`
	// LegacyHash is, for a family made before tags, the SHA-256 of its
	// last untagged token once a rotation replaced it: a replay of that
	// token is genuine (it revokes), any other untagged token is a forgery.
	LegacyHash []byte `json:"legacy_hash,omitempty"`
	// JKT is the RFC 7638 thumbprint of the DPoP key the family's refresh
	// tokens are bound to (RFC 9449 §5: a public client's); "" when they
	// are not bound. A refresh without a proof by that key is refused.
	JKT string `json:"jkt,omitempty"`
	// AuthTime is the auth_time of the authentication the grant came
	// from ([AuthCode.AuthTime]): every ID token of the family carries it
	// (OpenID Connect Core §12.2). Zero for a grant without openid.
	AuthTime time.Time `json:"auth_time,omitzero"`
	// Resources are the grant's RFC 8707 resource indicators
	// ([AuthCode.Resources]): each access token of the family is for them
	// or fewer. nil for a grant without resources.
	Resources []string `json:"resources,omitempty"`
}

// Expired reports whether f's refresh tokens can no longer be used at
// now: its idle expiry or its absolute one has come (a family without an
// absolute expiry refreshes no more, as the token endpoint decides).
func (f Family) Expired(now time.Time) bool {
	return !now.Before(f.ExpiresAt) || !now.Before(f.AbsoluteExp)
}

// Grant records a user's consent to a client for some scopes: the
// remembered consent that prompt=none trusts. What of it still holds is
// decided by [ConsentHeld] against the client's current review; every
// consent is written by [ConsentTo].
type Grant struct {
	UserID    int64     `json:"user_id"`
	ClientID  string    `json:"client_id"`
	Scopes    []string  `json:"scopes"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Review is the client's [ClientReview.Gen] when the consent was
	// written: every scope in Scopes held under that review.
	Review uint64 `json:"review,omitempty"`
	// Stamped marks a consent written by [ConsentTo], under a recorded
	// review. A consent stored by a release before reviews were recorded
	// is not: whether its client was rejected or narrowed since cannot
	// be told, so it holds nothing ([ConsentHeld]) until the user
	// consents again.
	Stamped bool `json:"stamped,omitempty"`
}

// AppRevocation is what [Store.RevokeApp] removed.
type AppRevocation struct {
	// Families are the IDs of the families revoked (each left its
	// [Revocation]), in ID order.
	Families []string
	// Grant: the consent grant was there and is gone.
	Grant bool
	// Codes counts the authorization codes deleted (unused ones and the
	// tombstones of used ones).
	Codes int
}

// Session is a logged-in browser session, keyed by the SHA-256 of the
// session cookie's value.
type Session struct {
	Hash      []byte    `json:"hash"`
	UserID    int64     `json:"user_id"`
	CSRF      string    `json:"csrf"` // per-session CSRF token (random, not a credential on its own)
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// AuthTime is when the user authenticated (OpenID Connect Core §2
	// auth_time): the login, or the platform's login assertion for a
	// handover; zero (read as CreatedAt, [Session.Authenticated]) for a
	// session made before it was recorded.
	AuthTime time.Time `json:"auth_time,omitzero"`
}

// Expired reports whether s signs no one in at now.
func (s Session) Expired(now time.Time) bool { return !now.Before(s.ExpiresAt) }

// Authenticated returns when the session's user authenticated: AuthTime,
// or CreatedAt when AuthTime was not recorded.
func (s Session) Authenticated() time.Time {
	if s.AuthTime.IsZero() {
		return s.CreatedAt
	}
	return s.AuthTime
}

// KeyState is the lifecycle state of a signing key.
type KeyState string

// Key states: next → active → retired → removed.
const (
	KeyNext    KeyState = "next"
	KeyActive  KeyState = "active"
	KeyRetired KeyState = "retired"
	// KeySecret is not a signing key: the one record (kid
	// keys.RefreshSecretKID) holding the secret that keys the refresh-token
	// tags. Never published.
	KeySecret KeyState = "secret"
)

// SigningKey is a JWT signing key. Private holds the private key as a JWK,
// sealed by package keys when a master key is configured; package data
// treats it as opaque bytes.
type SigningKey struct {
	KID         string    `json:"kid"`
	Alg         string    `json:"alg"`
	State       KeyState  `json:"state"`
	Private     []byte    `json:"private"`
	Sealed      bool      `json:"sealed"` // Private is encrypted with the master key
	Public      []byte    `json:"public"` // public JWK (JSON)
	CreatedAt   time.Time `json:"created_at"`
	ActivatedAt time.Time `json:"activated_at,omitzero"`
	RetiredAt   time.Time `json:"retired_at,omitzero"`
}

// GCResult counts what [Store.GarbageCollect] removed.
type GCResult struct {
	AuthCodes   int
	Families    int
	Sessions    int
	Nonces      int
	Revocations int
	DeviceCodes int
}

// Store is the storage contract. Every method is safe for concurrent use,
// checks ctx before starting work, and runs each call in one transaction.
// Update functions run inside that transaction; they must be pure (a backend
// may call them more than once) and return an error to abort without writing.
// Records returned are copies the caller may keep and modify.
type Store interface {
	// The operator's reviews of AI assistants' hosts (agents.go).
	AgentHostStore

	// Users.

	// CreateUser assigns u.ID (1, 2, …) and stores u; ErrExists when the
	// email or username is taken: another user's has the same canonical
	// form ([ident.Key]), however it is spelled.
	CreateUser(ctx context.Context, u User) (User, error)
	GetUser(ctx context.Context, id int64) (User, error)
	// GetUserByLogin finds the user whose email or username has the
	// canonical form ([ident.Key]) of login, an email first. A user whose
	// identifier clashed with an earlier user's when the store was
	// upgraded to canonical keys ([IndexUsers]) is not found by that
	// identifier.
	GetUserByLogin(ctx context.Context, login string) (User, error)
	ListUsers(ctx context.Context) ([]User, error)
	// CreateUsers stores all of us, or none of them, in one transaction:
	// IDs are assigned in order; ErrExists (naming the record) when an
	// email, username or external ID is taken, or repeated within us.
	CreateUsers(ctx context.Context, us []User) ([]User, error)
	// GetUserByExternalID finds the user whose ExternalID is id.
	GetUserByExternalID(ctx context.Context, id string) (User, error)
	// UpdateUser applies update to the stored user (same ID; ErrExists
	// when the new email, username or external ID is another user's
	// under [ident.Key]; an identifier whose key does not change is not
	// checked again, so a user left unindexed by an upgrade clash can
	// still be updated and disabled) in
	// one transaction. When update disables the user (Disabled false →
	// true), the same transaction deletes every session, authorization
	// code, refresh-token family and consent grant of the user; and while
	// a user is disabled, CreateSession, CreateAuthCode and PutGrant for
	// them fail with ErrUserDisabled. So once UpdateUser returns, no
	// credential of the user is left and none can be made.
	UpdateUser(ctx context.Context, id int64, update func(User) (User, error)) (User, error)

	// Clients.

	// CreateClient stores c after [ValidateClient]; ErrExists on a taken ID.
	CreateClient(ctx context.Context, c Client) error
	GetClient(ctx context.Context, id string) (Client, error)
	// ListClients returns all clients, or those in status when it is not "".
	ListClients(ctx context.Context, status ClientStatus) ([]Client, error)
	// UpdateClient applies update to the stored client and stores the result
	// after [ValidateClient] and [ValidateClientChange] against the old
	// record, with its Review kept by [Reviewed], all in one transaction.
	UpdateClient(ctx context.Context, id string, update func(Client) (Client, error)) (Client, error)

	// Authorization codes.

	CreateAuthCode(ctx context.Context, c AuthCode) error
	// CreateConsentedCode creates the code c (as CreateAuthCode) in one
	// transaction that also reads the client c.ClientID and the consent
	// grant of c.UserID to it (found false when there is none): check
	// decides from them whether the code may be made, and its error
	// aborts with nothing written (returned as it is). The check and the
	// code are one step against [Store.RevokeApp] and the user's disable
	// ([Store.UpdateUser]), on every process sharing the store: a removal
	// that commits first leaves check no grant, one that commits after it
	// deletes the code. ErrNotFound when there is no such client (check is
	// not called); ErrUserDisabled as CreateAuthCode.
	CreateConsentedCode(ctx context.Context, c AuthCode, check func(client Client, g Grant, found bool) error) error
	// ExchangeAuthCode redeems the code whose hash is given, in one
	// transaction: exchange checks the code (client, redirect URI, PKCE,
	// expiry) and returns the family to create; the code is then marked used
	// with the family's ID and the family is stored. An error from exchange
	// aborts with nothing written. A code already used returns the stored
	// code and ErrCodeUsed, without calling exchange.
	ExchangeAuthCode(ctx context.Context, hash []byte, exchange func(AuthCode) (Family, error)) (AuthCode, Family, error)

	// Refresh-token families.

	GetFamily(ctx context.Context, id string) (Family, error)
	// RotateRefreshToken runs update on the family id inside one
	// transaction; the store makes no decision of its own. update sees the
	// stored record and returns:
	//   - a family (same ID and ClientID; else a *RuleError): it is stored
	//     and returned;
	//   - an error wrapping ErrTokenReused: the family is deleted (and
	//     its [Revocation] stored) in the same transaction, and the
	//     stored record is returned with that error (as update returned it);
	//   - any other error: nothing is written; the error is returned as is.
	// ErrNotFound when there is no family id (update is not called).
	// With [WithPresented] on ctx, update may also be called on a
	// record the store had of the family, with TokenHash set to the
	// presented hash; its result is written only where that is the
	// rotation update makes of the stored record (see WithPresented).
	RotateRefreshToken(ctx context.Context, id string, update func(Family) (Family, error)) (Family, error)
	// DeleteFamily revokes a family; ErrNotFound when there is none.
	// Like the delete of RotateRefreshToken, it stores the family's
	// [Revocation] in the same transaction.
	DeleteFamily(ctx context.Context, id string) error
	// ListRevoked returns the revocations whose LastIssuedAt is at or
	// after since, ordered by GrantID.
	ListRevoked(ctx context.Context, since time.Time) ([]Revocation, error)
	// ListFamilies lists the families of a client ("" for all).
	ListFamilies(ctx context.Context, clientID string) ([]Family, error)
	// ListUserFamilies lists the families of one user, ordered by client
	// ID and then family ID, from an index by user (the Connected apps
	// page reads it: its cost is the user's families, not the store's).
	ListUserFamilies(ctx context.Context, userID int64) ([]Family, error)
	// RevokeApp ends everything the user allowed clientID, in one
	// transaction: the user's authorization codes for the client (unused
	// or not: a code issued before the removal can never be exchanged
	// after it), every refresh-token family of the pair (each with its
	// [Revocation], as DeleteFamily), and the consent grant. A code
	// exchange or a rotation of the pair's families that commits before
	// it is undone by it; one that comes after finds nothing; so is a
	// [Store.CreateConsentedCode] of the pair. Nothing to
	// remove is not an error (the zero AppRevocation).
	RevokeApp(ctx context.Context, userID int64, clientID string) (AppRevocation, error)

	// Consent grants.

	PutGrant(ctx context.Context, g Grant) error
	GetGrant(ctx context.Context, userID int64, clientID string) (Grant, error)
	ListGrants(ctx context.Context, userID int64) ([]Grant, error)
	DeleteGrant(ctx context.Context, userID int64, clientID string) error

	// Sessions.

	CreateSession(ctx context.Context, s Session) error
	GetSession(ctx context.Context, hash []byte) (Session, error)
	DeleteSession(ctx context.Context, hash []byte) error

	// Signing keys.

	ListKeys(ctx context.Context) ([]SigningKey, error)
	// UpdateKeys replaces the whole key set by update(current set) in one
	// transaction, so that concurrent rotations serialize and there is
	// always exactly the set one of them computed.
	UpdateKeys(ctx context.Context, update func([]SigningKey) ([]SigningKey, error)) ([]SigningKey, error)

	// One-time values.

	// UseNonce records key (the hash of a DPoP proof's jti, a pushed
	// request_uri, a login assertion's jti) as used until expires, and returns an error
	// wrapping ErrExists when it is already recorded (expired or not, until
	// GarbageCollect removes it): of any number of calls with one key, on
	// any number of processes sharing the store, exactly one succeeds.
	// The record is durable like every other write.
	UseNonce(ctx context.Context, key []byte, expires time.Time) error
	// NonceUsed reports whether key is recorded by UseNonce (until
	// GarbageCollect removes it). It writes nothing: the token endpoint
	// asks it before a grant is used, and records a DPoP proof's jti
	// with UseNonce only once the grant has passed.
	NonceUsed(ctx context.Context, key []byte) (bool, error)

	// Device authorizations (RFC 8628).

	// CreateDeviceCode stores d under d.UserCode: ErrExists when the user
	// code is taken (expired or not, until GarbageCollect removes it);
	// [ErrTooManyDeviceCodes] when the client already has max device
	// codes whose ExpiresAt is after d.CreatedAt. The count and the
	// insert are one transaction: on any number of processes sharing the
	// store, a client never holds more than max outstanding codes.
	CreateDeviceCode(ctx context.Context, d DeviceCode, max int) error
	// GetDeviceCode returns the device code of a canonical user code.
	GetDeviceCode(ctx context.Context, userCode string) (DeviceCode, error)
	// UpdateDeviceCode applies update to the stored device code in one
	// transaction and stores the result after [ValidateDeviceUpdate];
	// ErrNotFound when there is none (update is not called).
	UpdateDeviceCode(ctx context.Context, userCode string, update func(DeviceCode) (DeviceCode, error)) (DeviceCode, error)

	// GarbageCollect removes auth codes, families and sessions whose
	// ExpiresAt (or AbsoluteExp) is before now, and revocations whose
	// LastIssuedAt is more than [RevocationKeep] before now, and nonces
	// whose expiry is before now, and device codes whose ExpiresAt is
	// before now.
	GarbageCollect(ctx context.Context, now time.Time) (GCResult, error)

	// Close releases the store. Calls after Close fail.
	Close() error
}

// Dump is every record of a store, as `oauthd store copy` moves them from
// one backend to another. Backends that can be copied from have an
// Export method returning it; secrets, tokens and sessions stay hashes and
// private keys stay as they are (sealed or not).
type Dump struct {
	Users     []User       `json:"users"`
	Clients   []Client     `json:"clients"`
	AuthCodes []AuthCode   `json:"auth_codes"`
	Families  []Family     `json:"families"`
	Grants    []Grant      `json:"grants"`
	Sessions  []Session    `json:"sessions"`
	Keys      []SigningKey `json:"keys"`
	// AgentHosts are the operator's reviews of AI assistants' hosts.
	AgentHosts []AgentHost `json:"agent_hosts,omitempty"`
}
