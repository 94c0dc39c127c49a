package issuer

import (
	"context"

	"oauthd/data"
	"oauthd/keys/verify"
)

// Store is what a [Server] reads and writes: the slices of [data.Store]
// below, each declared by what its endpoints call, and nothing else. Every
// data.Store is one (the backends in data/bolt, data/memory and
// data/postgres, and the client cache data/cache); cmd/oauthd's
// consumers_test.go names each of them.
type Store interface {
	ClientStore
	CodeStore
	GrantStore
	FamilyStore
	UserStore
	DeviceStore
	// UseNonce spends a DPoP proof's jti (dpop.go) and a pushed
	// request_uri (par.go) once, across replicas; NonceUsed tells,
	// without writing, whether a proof's jti was spent (dpop.go).
	verify.NonceStore
	NonceUsed(ctx context.Context, key []byte) (bool, error)
}

// ClientStore is what the issuer reads of clients: the authorization
// request (authorize.go), client authentication (clientauth.go), the token
// endpoint's check that the client is still approved (token.go) and a
// grant's liveness (grant.go) get a client; a legacy client's usage and a
// secret's last use are counted with UpdateClient; ListClients lists the
// approved clients' origins for CORS (cors.go).
type ClientStore interface {
	GetClient(ctx context.Context, id string) (data.Client, error)
	// CreateClient stores an AI assistant's client when a user consents
	// to it (clientmeta.go).
	CreateClient(ctx context.Context, c data.Client) error
	// GetAgentHost reads the operator's review of an assistant's host
	// (clientmeta.go).
	GetAgentHost(ctx context.Context, host string) (data.AgentHost, error)
	UpdateClient(ctx context.Context, id string, update func(data.Client) (data.Client, error)) (data.Client, error)
	ListClients(ctx context.Context, status data.ClientStatus) ([]data.Client, error)
}

// CodeStore is the authorization code's life: Approve stores it, on the
// condition of the user's consent (authorize.go), the token endpoint
// redeems it once (token.go).
type CodeStore interface {
	CreateConsentedCode(ctx context.Context, c data.AuthCode, check func(data.Client, data.Grant, bool) error) error
	ExchangeAuthCode(ctx context.Context, hash []byte, exchange func(data.AuthCode) (data.Family, error)) (data.AuthCode, data.Family, error)
}

// DeviceStore is the device authorization grant's record (device.go).
type DeviceStore interface {
	CreateDeviceCode(ctx context.Context, d data.DeviceCode, max int) error
	GetDeviceCode(ctx context.Context, userCode string) (data.DeviceCode, error)
	UpdateDeviceCode(ctx context.Context, userCode string, update func(data.DeviceCode) (data.DeviceCode, error)) (data.DeviceCode, error)
}

// GrantStore records the user's consent (Approve, authorize.go).
type GrantStore interface {
	GetGrant(ctx context.Context, userID int64, clientID string) (data.Grant, error)
	PutGrant(ctx context.Context, g data.Grant) error
}

// FamilyStore is the refresh-token family (the grant) after the code:
// rotated by the refresh grant (refresh.go), read by revocation,
// introspection and the liveness check of /v2/me (revoke.go,
// introspect.go, grant.go), deleted by revocation and by a code replay
// (revoke.go, token.go).
type FamilyStore interface {
	GetFamily(ctx context.Context, id string) (data.Family, error)
	RotateRefreshToken(ctx context.Context, id string, update func(data.Family) (data.Family, error)) (data.Family, error)
	DeleteFamily(ctx context.Context, id string) error
}

// UserStore reads the profile /v2/me answers with (me.go).
type UserStore interface {
	GetUser(ctx context.Context, id int64) (data.User, error)
}

// Every data.Store is a Store: the issuer asks for a slice of the contract
// the conformance suite checks, never for more.
var _ Store = data.Store(nil)
