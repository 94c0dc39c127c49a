package admin

import (
	"context"
	"errors"
	"time"

	"oauthd/keys"
)

// Service is everything the operator can do. [Local] and [SocketClient] implement it.
type Service interface {
	AddUser(ctx context.Context, u NewUser) (UserView, error)
	ListUsers(ctx context.Context) ([]UserView, error)
	// ImportUsers creates all the users with their existing password
	// hashes, or none (an ErrInvalid error names every bad row by line).
	ImportUsers(ctx context.Context, us []ImportUser) ([]UserView, error)
	// DisableUser (by ID, email or username) revokes the user's sessions,
	// codes, refresh-token families and consent grants at once; the user
	// cannot log in or consent until EnableUser. EnableUser restores login,
	// not what was revoked.
	DisableUser(ctx context.Context, ref string) (UserView, error)
	EnableUser(ctx context.Context, ref string) (UserView, error)
	// ListUserApps lists the apps the user (by ID, email or username)
	// allowed and has not removed ([AppView]), as /settings/apps shows them.
	ListUserApps(ctx context.Context, user string) ([]AppView, error)
	// RevokeUserApp removes one app's access (Store.RevokeApp: its codes,
	// refresh-token families and the consent, in one transaction) and
	// records who did it.
	RevokeUserApp(ctx context.Context, user, clientID string) (RemovedApp, error)

	CreateClient(ctx context.Context, c NewClient) (CreatedClient, error)
	ImportClients(ctx context.Context, cs []LegacyClient) ([]string, error)
	ListClients(ctx context.Context, status string) ([]ClientView, error)
	ShowClient(ctx context.Context, id string) (ClientView, error)
	ApproveClient(ctx context.Context, id string) (ClientView, error)
	// ApproveRevision is ApproveClient that refuses (ErrConflict) when the
	// client's Revision is no longer revision: what the operator reviewed
	// changed in the meantime.
	ApproveRevision(ctx context.Context, id, revision string) (ClientView, error)
	RejectClient(ctx context.Context, id, reason string) (ClientView, error)
	// RejectRevision is RejectClient that refuses (ErrConflict) when the
	// client's Revision is no longer revision: a retried rejection of a
	// pending change, or one whose change was withdrawn meanwhile, must not
	// reject the whole client (and revoke its grants) instead.
	RejectRevision(ctx context.Context, id, reason, revision string) (ClientView, error)

	GenerateSecret(ctx context.Context, id string) (CreatedSecret, error)
	ListSecrets(ctx context.Context, id string) ([]SecretView, error)
	RevokeSecret(ctx context.Context, id, secretID string) error

	// SetScopes and SetRedirectURIs are the operator's changes: they apply
	// at once. SetScopes refuses to migrate a legacy client that is not
	// migration-safe; ForceScopes does it anyway.
	SetScopes(ctx context.Context, id string, scopes []string) (ClientView, error)
	ForceScopes(ctx context.Context, id string, scopes []string) (ClientView, error)
	SetRedirectURIs(ctx context.Context, id string, uris []string) (ClientView, error)
	// SetPostLogoutRedirectURIs is the operator's change of where the
	// end-session endpoint may send the browser after a sign-out (OpenID
	// Connect RP-Initiated Logout 1.0); it applies at once. An empty list
	// removes them all.
	SetPostLogoutRedirectURIs(ctx context.Context, id string, uris []string) (ClientView, error)
	// SetClientOptions is the operator's change of a client's DPoP and
	// PAR requirements (RFC 9449 §5.2, RFC 9126 §6): it applies at once,
	// like SetScopes (the operator is the reviewer).
	SetClientOptions(ctx context.Context, id string, o ClientOptions) (ClientView, error)
	// EditClient is the owner's change (the settings pages): on an
	// approved client what narrows it applies at once and what widens it
	// waits for [Service.ApproveClient] or [Service.RejectClient].
	EditClient(ctx context.Context, id string, e ClientEdit) (EditResult, error)

	// AllowAgentHost lets the AI assistants whose client ID metadata
	// documents are on host ask for scopes (it replaces an earlier review
	// of the host; its stored clients get the new scopes).
	AllowAgentHost(ctx context.Context, host string, scopes []string) (AgentHostView, error)
	ListAgentHosts(ctx context.Context) ([]AgentHostView, error)
	// DenyAgentHost removes the host's review and revokes every grant of
	// every client on that host.
	DenyAgentHost(ctx context.Context, host string) (DeniedAgentHost, error)

	ListKeys(ctx context.Context) ([]keys.Info, error)
	RotateKeys(ctx context.Context, alg string) (keys.RotateResult, error)
	RevokeKey(ctx context.Context, kid string) error
}

// NewUser is the input of [Service.AddUser].
type NewUser struct {
	Email    string `json:"email"`
	Username string `json:"username"`
	Name     string `json:"name"`
	TimeZone string `json:"time_zone,omitempty"` // IANA name; default UTC
	Password string `json:"password"`            // at least MinPasswordLen bytes
}

// MinPasswordLen is the shortest password [Service.AddUser] accepts.
const MinPasswordLen = 8

// UserView is a user as the operator sees it (never the password hash).
type UserView struct {
	ID       int64  `json:"id"`
	Email    string `json:"email"`
	Username string `json:"username"`
	Name     string `json:"name"`
	TimeZone string `json:"time_zone,omitempty"`
	// ExternalID is the user's ID at the platform that logs them in
	// (login handover); absent for local users.
	ExternalID string `json:"external_id,omitempty"`
	// State is "active" or "disabled".
	State      string     `json:"state"`
	DisabledAt *time.Time `json:"disabled_at"`
	// Clash says, for a user whose email or username has the canonical
	// form of an earlier user's (stored before one canonical form, found
	// at the upgrade: [data.Clash]), which identifier and whose; the user
	// is not found by it (log in with the other, or by the platform) until
	// the operator resolves it. Absent for every other user.
	Clash string `json:"clash,omitempty"`
	// Invalid says which of the user's stored fields (email, username,
	// name, time zone) the rules of a new user refuse today, and why:
	// one stored before the rule (a username such as "+1" that every USER
	// argument reads as an ID, an invisible character, the time zone
	// "Local"). Nothing was changed; the user works as before, and the
	// operator decides. Empty (null in JSON) when every field passes.
	Invalid string `json:"invalid"`
}

// NewClient is the input of [Service.CreateClient].
type NewClient struct {
	// Owner names the user who owns the client: an ID, an email or a
	// username ([Local.ResolveUser]); resolved once, the client then
	// belongs to the user's ID. Ignored when OwnerID is set.
	Owner string `json:"owner,omitempty"`
	// OwnerID is the owner's user ID, for a caller that has it (the
	// settings pages: the signed-in user).
	OwnerID      int64    `json:"owner_id,omitempty"`
	Name         string   `json:"name"`
	RedirectURIs []string `json:"redirect_uris"`
	// Scopes are scope names; each item may itself be a comma- or
	// space-separated list.
	Scopes []string `json:"scopes"`
	Public bool     `json:"public,omitempty"`
	// GrantTypes are the grant types the client may use (data.GrantTypes);
	// none means data.DefaultGrantTypes.
	GrantTypes []string `json:"grant_types,omitempty"`
	// JWKS (a public JWK set, JSON) or JWKSURI (https) make the client
	// authenticate with private_key_jwt instead of a secret: it gets none.
	JWKS    string `json:"jwks,omitempty"`
	JWKSURI string `json:"jwks_uri,omitempty"`
}

// CreatedClient is the result of [Service.CreateClient]. ClientSecret is
// shown only here and can never be retrieved again.
type CreatedClient struct {
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret,omitempty"`
	SecretID     string   `json:"secret_id,omitempty"`
	Status       string   `json:"status"`
	ClientType   string   `json:"client_type"`
	Name         string   `json:"name"`
	RedirectURIs []string `json:"redirect_uris"`
	Scopes       []string `json:"scopes"`
	GrantTypes   []string `json:"grant_types"`
	// TokenEndpointAuthMethod is how the client authenticates:
	// client_secret_basic (or _post), private_key_jwt, or none (public).
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method"`
}

// LegacyClient is one record of `oauthd clients import`: a client made before
// scopes existed.
type LegacyClient struct {
	ClientID     string   `json:"client_id"`
	Name         string   `json:"name"`
	Owner        string   `json:"owner"`
	RedirectURIs []string `json:"redirect_uris"`
	ClientSecret string   `json:"client_secret,omitempty"`
	ClientType   string   `json:"client_type,omitempty"` // default confidential
}

// ClientView is a client as the operator sees it: secret IDs, never hashes.
type ClientView struct {
	ClientID string `json:"client_id"`
	Name     string `json:"name"`
	// OwnerID is the ID of the user who owns the client (0: unclaimed);
	// every ownership decision compares it, never an email.
	OwnerID int64 `json:"owner_id"`
	// Owner is the owner's current email, for people to read ("" when
	// unclaimed).
	Owner string `json:"owner"`
	// UnclaimedOwner is, for an unclaimed client, the owner it was given
	// (an email that named no user); no user is ever matched to it.
	UnclaimedOwner string `json:"unclaimed_owner,omitempty"`
	// AgentHost is, for an AI assistant's client (a client ID metadata
	// document, stored when a user consented), the host that vouches for
	// it; such a client has no owner.
	AgentHost    string   `json:"agent_host,omitempty"`
	ClientType   string   `json:"client_type"`
	Status       string   `json:"status"`
	RejectReason string   `json:"reject_reason,omitempty"`
	RedirectURIs []string `json:"redirect_uris"`
	// PostLogoutRedirectURIs are where the end-session endpoint may send
	// the browser after a sign-out (OpenID Connect RP-Initiated Logout).
	PostLogoutRedirectURIs []string `json:"post_logout_redirect_uris"`
	Scopes                 []string `json:"scopes"`
	// GrantTypes are the grant types the client may use.
	GrantTypes []string `json:"grant_types"`
	// TokenEndpointAuthMethod is how the client authenticates
	// (client_secret_basic, private_key_jwt or none); JWKSURI is where its
	// keys are, and JWKS its inline keys ("" when none).
	TokenEndpointAuthMethod string       `json:"token_endpoint_auth_method"`
	JWKSURI                 string       `json:"jwks_uri,omitempty"`
	JWKS                    string       `json:"jwks,omitempty"`
	Legacy                  bool         `json:"legacy"`
	Secrets                 []SecretView `json:"secrets"`
	// DPoPBoundAccessTokens (RFC 9449 §5.2): every token request needs a
	// DPoP proof. RequirePAR (RFC 9126 §6): authorization requests must be
	// pushed first.
	DPoPBoundAccessTokens bool `json:"dpop_bound_access_tokens"`
	RequirePAR            bool `json:"require_pushed_authorization_requests"`
	// AllowedOrigins are the browser origins CORS lets call the token and
	// revocation endpoints for this client ([data.AllowedOrigins]):
	// derived from the approved redirect URIs of a public client, none for
	// a confidential one.
	AllowedOrigins []string `json:"allowed_origins"`
	// AuthorizationRequests counts, for a legacy client only, the recent
	// authorization requests with and without a scope parameter.
	AuthorizationRequests *RequestCounts `json:"authorization_requests"`
	// MigrationSafe (legacy clients only) is true when no authorization
	// request without a scope parameter came in the counted window: saving
	// scopes will then not break the client's users.
	MigrationSafe *bool `json:"migration_safe"`
	// PendingChange is the owner's change that widens the client, waiting
	// for approval; the fields above are the approved settings, the only
	// ones in force.
	PendingChange *ChangeView `json:"pending_change"`
	// RejectedChange is the owner's last change that was rejected, with
	// the reason (until the owner's next edit).
	RejectedChange *ChangeView `json:"rejected_change"`
	// Revision identifies what a review decides on (type, scopes, redirect
	// URIs, the pending change); `clients approve --revision` refuses when
	// it changed since the operator looked.
	Revision  string    `json:"revision"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ChangeView is a change of a client's settings that widens it: what it
// adds, and the settings the client has once it is approved.
type ChangeView struct {
	AddScopes       []string `json:"add_scopes"`
	AddRedirectURIs []string `json:"add_redirect_uris"`
	// AddPostLogoutRedirectURIs are post-logout redirect URIs the change
	// adds (absent when none).
	AddPostLogoutRedirectURIs []string `json:"add_post_logout_redirect_uris,omitempty"`
	// AddGrantTypes are grant types the change adds (absent when none);
	// GrantTypes are the client's once approved.
	AddGrantTypes []string `json:"add_grant_types,omitempty"`
	GrantTypes    []string `json:"grant_types"`
	// ClientType is the type asked for; "" when the type stays.
	ClientType string `json:"client_type,omitempty"`
	// DropDPoPBoundAccessTokens and DropRequirePAR: the change turns the
	// protection off.
	DropDPoPBoundAccessTokens bool `json:"drop_dpop_bound_access_tokens"`
	DropRequirePAR            bool `json:"drop_require_pushed_authorization_requests"`
	// Scopes, RedirectURIs and ResultType are the client's settings once
	// the change is approved.
	Scopes       []string `json:"scopes"`
	RedirectURIs []string `json:"redirect_uris"`
	// PostLogoutRedirectURIs are the client's once approved.
	PostLogoutRedirectURIs []string  `json:"post_logout_redirect_uris"`
	ResultType             string    `json:"result_client_type"`
	ProposedBy             string    `json:"proposed_by"`
	ProposedAt             time.Time `json:"proposed_at"`
	RejectReason           string    `json:"reject_reason,omitempty"`
	// AllowedOrigins are the client's CORS origins once approved.
	AllowedOrigins []string `json:"allowed_origins"`
}

// ClientEdit is a change of a client's settings asked for by its owner in
// the settings pages. Each set field is the whole new value; a nil list
// or an empty type leaves that setting as the owner last asked for it.
type ClientEdit struct {
	Scopes       []string `json:"scopes,omitempty"`
	RedirectURIs []string `json:"redirect_uris,omitempty"`
	// PostLogoutRedirectURIs, when not nil, are the post-logout redirect
	// URIs wanted (an empty list removes them all); a new one waits for
	// review like a new redirect URI.
	PostLogoutRedirectURIs []string `json:"post_logout_redirect_uris"`
	// GrantTypes, when not nil, are the grant types wanted; a new one
	// waits for review like a new scope.
	GrantTypes []string `json:"grant_types,omitempty"`
	ClientType string   `json:"client_type,omitempty"` // "confidential" or "public"
	// Force migrates a legacy client although authorization requests
	// without a scope parameter came recently (the owner confirmed).
	Force bool `json:"force,omitempty"`
	// DPoPBoundAccessTokens and RequirePAR, when set, are the new values
	// of the client's protections: turning one on applies at once (it
	// narrows), turning one off waits for review (it widens).
	DPoPBoundAccessTokens *bool `json:"dpop_bound_access_tokens,omitempty"`
	RequirePAR            *bool `json:"require_pushed_authorization_requests,omitempty"`
}

// ClientOptions are the operator's settings of a client's protections
// ([Service.SetClientOptions]); a nil field stays as it is.
type ClientOptions struct {
	DPoPBoundAccessTokens *bool `json:"dpop_bound_access_tokens,omitempty"`
	RequirePAR            *bool `json:"require_pushed_authorization_requests,omitempty"`
	// Owner gives the client to a user (an ID, email or username,
	// resolved once to the user's ID): how an unclaimed client gets an
	// owner, or a client changes hands.
	Owner *string `json:"owner,omitempty"`
}

// EditResult says what became of a [ClientEdit].
type EditResult struct {
	Client ClientView `json:"client"`
	// Applied: the client's settings in force changed (a narrowing, a
	// migration, or any edit of a client that is not approved).
	Applied bool `json:"applied"`
	// Pending: the client has a pending change after the edit.
	Pending bool `json:"pending"`
	// NewSecret is, for a public client that becomes confidential, its
	// secret: shown only here; it works once the change is approved.
	NewSecret *CreatedSecret `json:"new_secret,omitempty"`
}

// RequestCounts counts a legacy client's authorization requests over the
// last Days days.
type RequestCounts struct {
	WithScope    int64 `json:"with_scope"`
	WithoutScope int64 `json:"without_scope"`
	Days         int   `json:"days"`
}

// SecretView describes one active client secret. LastUsedAt is null when the
// secret was never used.
type SecretView struct {
	SecretID   string     `json:"secret_id"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

// CreatedSecret is the result of [Service.GenerateSecret]; the secret is shown
// only here.
type CreatedSecret struct {
	SecretID     string `json:"secret_id"`
	ClientSecret string `json:"client_secret"`
}

// opError is an error with an operator-facing message that unwraps to a
// sentinel (data.ErrNotFound, ...), so errors.Is works and the message needs
// no suffix.
type opError struct {
	msg string
	err error
}

func (e *opError) Error() string { return e.msg }
func (e *opError) Unwrap() error { return e.err }

func newError(sentinel error, msg string) error { return &opError{msg: msg, err: sentinel} }

// isErr is errors.Is, kept short for the table of kinds.
func isErr(err, target error) bool { return errors.Is(err, target) }
