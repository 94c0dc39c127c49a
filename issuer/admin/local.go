package admin

import (
	"context"
	"log/slog"
	"time"

	"oauthd/data"
	"oauthd/data/password"
)

// Store is the slice of [data.Store] the operator API uses: users,
// clients, the revocation of a client's grants and a user's connected
// apps; any data.Store is one.
type Store interface {
	CreateUser(ctx context.Context, u data.User) (data.User, error)
	CreateUsers(ctx context.Context, us []data.User) ([]data.User, error)
	GetUser(ctx context.Context, id int64) (data.User, error)
	GetUserByLogin(ctx context.Context, login string) (data.User, error)
	ListUsers(ctx context.Context) ([]data.User, error)
	UpdateUser(ctx context.Context, id int64, update func(data.User) (data.User, error)) (data.User, error)

	CreateClient(ctx context.Context, c data.Client) error
	GetClient(ctx context.Context, id string) (data.Client, error)
	ListClients(ctx context.Context, status data.ClientStatus) ([]data.Client, error)
	UpdateClient(ctx context.Context, id string, update func(data.Client) (data.Client, error)) (data.Client, error)

	ListFamilies(ctx context.Context, clientID string) ([]data.Family, error)
	DeleteFamily(ctx context.Context, id string) error

	// A user's connected apps.
	ListGrants(ctx context.Context, userID int64) ([]data.Grant, error)
	ListUserFamilies(ctx context.Context, userID int64) ([]data.Family, error)
	RevokeApp(ctx context.Context, userID int64, clientID string) (data.AppRevocation, error)

	// The reviews of AI assistants' hosts (agents.go).
	data.AgentHostStore
}

var _ Store = data.Store(nil)

// Local implements [Service] over a store and a key manager, in this process.
// Create it with [NewLocal].
type Local struct {
	store Store
	keys  KeyManager
	log   *slog.Logger
	now   func() time.Time
	actor Actor // who acts when the request's context names no one
	// hashes checks imported password hashes, keeping its measures of
	// their cost for the life of the process.
	hashes *password.ImportChecker
}

var _ Service = (*Local)(nil)

// NewLocal returns a Local. km may be nil when no key operation will be
// called; logger nil means discard; now nil means time.Now.
func NewLocal(store Store, km KeyManager, logger *slog.Logger, now func() time.Time) *Local {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return &Local{store: store, keys: km, log: logger, now: now, hashes: &password.ImportChecker{}}
}

// Users.

// Clients.
