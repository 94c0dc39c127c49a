package verify

import (
	"context"
	"crypto"
	"time"
)

// Claims are the verified claims of an access token (RFC 9068 §2.2).
type Claims struct {
	Issuer   string
	Subject  string // the user ID, as a string
	Audience []string
	ClientID string
	Scopes   []string // empty for an unrestricted legacy token
	// Unrestricted is true only when the token carries the explicit
	// "unrestricted": true claim of a legacy client; a missing scope claim
	// never means unrestricted.
	Unrestricted bool
	ID           string // jti
	IssuedAt     time.Time
	ExpiresAt    time.Time
	NotBefore    time.Time
}

// KeySource finds the public key that verifies a token signed under kid,
// with the algorithm that key is for. It returns an error wrapping
// [ErrUnknownKey] when there is no such key.
type KeySource interface {
	Key(ctx context.Context, kid string) (key crypto.PublicKey, alg string, err error)
}
