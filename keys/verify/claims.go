package verify

import (
	"context"
	"crypto"
	"time"
)

// Claims are the verified claims of an access token (RFC 9068 §2.2).
type Claims struct {
	Issuer string
	// Subject is the user ID, as a string; for a token without a user
	// (client_credentials) it is the client ID (RFC 9068 §2.2): see
	// [Claims.HasUser].
	Subject  string
	Audience []string
	ClientID string
	Scopes   []string // empty for an unrestricted legacy token
	// Unrestricted is true only when the token carries the explicit
	// "unrestricted": true claim of a legacy client; a missing scope claim
	// never means unrestricted.
	Unrestricted bool
	ID           string // jti
	// GrantID is the grant_id claim: the grant (refresh-token family) the
	// token was issued from; empty on tokens issued before the claim
	// existed. A verifier that verifies offline cannot know that the grant
	// was revoked: the token stays valid until exp (at most 30 minutes).
	// Ask the authorization server (introspection) where that matters.
	GrantID string
	// JKT is cnf.jkt: the thumbprint of the DPoP key the token is bound to
	// (RFC 9449 §6.1); "" for a bearer token. A bound token is accepted
	// only with a proof by that key ([DPoP.Check]), never as a bearer
	// token.
	JKT       string
	IssuedAt  time.Time
	ExpiresAt time.Time
	NotBefore time.Time
}

// HasUser reports whether the token was issued for a user: false for a
// client acting for itself (client_credentials), whose sub is its
// client_id (RFC 9068 §2.2). oauthd never gives a client that may act for
// itself an ID that reads as a user's (a decimal number), so a user's
// token never has sub equal to client_id.
func (c *Claims) HasUser() bool { return c.Subject != c.ClientID }

// KeySource finds the public key that verifies a token signed under kid,
// with the algorithm that key is for. It returns an error wrapping
// [ErrUnknownKey] when there is no such key.
type KeySource interface {
	Key(ctx context.Context, kid string) (key crypto.PublicKey, alg string, err error)
}
