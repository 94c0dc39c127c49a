package admin

import (
	"context"
	"errors"
	"time"

	"oauthd/keys"
)

// Service is everything the operator can do. [Local] and [Client] implement it.
type Service interface {
	AddUser(ctx context.Context, u NewUser) (UserView, error)
	ListUsers(ctx context.Context) ([]UserView, error)

	CreateClient(ctx context.Context, c NewClient) (CreatedClient, error)
	ImportClients(ctx context.Context, cs []LegacyClient) ([]string, error)
	ListClients(ctx context.Context, status string) ([]ClientView, error)
	ShowClient(ctx context.Context, id string) (ClientView, error)
	ApproveClient(ctx context.Context, id string) (ClientView, error)
	RejectClient(ctx context.Context, id, reason string) (ClientView, error)

	GenerateSecret(ctx context.Context, id string) (CreatedSecret, error)
	ListSecrets(ctx context.Context, id string) ([]SecretView, error)
	RevokeSecret(ctx context.Context, id, secretID string) error

	SetScopes(ctx context.Context, id string, scopes []string) (ClientView, error)
	SetRedirectURIs(ctx context.Context, id string, uris []string) (ClientView, error)

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
}

// NewClient is the input of [Service.CreateClient].
type NewClient struct {
	Owner        string   `json:"owner"` // an existing user's email
	Name         string   `json:"name"`
	RedirectURIs []string `json:"redirect_uris"`
	// Scopes are scope names; each item may itself be a comma- or
	// space-separated list.
	Scopes []string `json:"scopes"`
	Public bool     `json:"public,omitempty"`
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
	ClientID     string       `json:"client_id"`
	Name         string       `json:"name"`
	Owner        string       `json:"owner"`
	ClientType   string       `json:"client_type"`
	Status       string       `json:"status"`
	RejectReason string       `json:"reject_reason,omitempty"`
	RedirectURIs []string     `json:"redirect_uris"`
	Scopes       []string     `json:"scopes"`
	Legacy       bool         `json:"legacy"`
	Secrets      []SecretView `json:"secrets"`
	// AuthorizationRequests counts, for a legacy client only, the recent
	// authorization requests with and without a scope parameter.
	AuthorizationRequests *RequestCounts `json:"authorization_requests,omitempty"`
	// MigrationSafe (legacy clients only) is true when no authorization
	// request without a scope parameter came in the counted window: saving
	// scopes will then not break the client's users.
	MigrationSafe *bool     `json:"migration_safe,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
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
