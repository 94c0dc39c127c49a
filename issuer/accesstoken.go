package issuer

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"oauthd/data"
)

// accessClaims are the claims of an access token (RFC 9068 §2.2). The
// Signer sets the header (typ at+jwt, kid, alg). aud is one string, or an
// array for several resources ([audience]).
// scope is absent on an unrestricted legacy token, which instead carries
// "unrestricted": true; a scoped token never carries unrestricted.
// grant_id is the ID of the refresh-token family (the grant) the token was
// issued from: the server's own checks (/v2/me, introspection) refuse the
// token once that grant is revoked. It is a private claim (RFC 9068 §2.2
// allows more claims); not "sid", which OpenID Connect registers for a
// login session at the provider, a different thing with its own logout
// semantics. The family ID is not a secret: it cannot refresh, and since
// refresh tokens carry a tag it cannot revoke either.
type accessClaims struct {
	Issuer       string   `json:"iss"`
	Subject      string   `json:"sub"`
	Audience     audience `json:"aud"`
	ExpiresAt    int64    `json:"exp"`
	IssuedAt     int64    `json:"iat"`
	ID           string   `json:"jti"`
	ClientID     string   `json:"client_id"`
	GrantID      string   `json:"grant_id,omitempty"`
	Scope        string   `json:"scope,omitempty"`
	Unrestricted bool     `json:"unrestricted,omitempty"`
	// Cnf holds cnf.jkt (RFC 9449 §6.1): the thumbprint of the DPoP key
	// the token is bound to; nil for a bearer token.
	Cnf *cnf `json:"cnf,omitempty"`
}

func (c *accessClaims) GetExpirationTime() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.ExpiresAt, 0)), nil
}
func (c *accessClaims) GetIssuedAt() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.IssuedAt, 0)), nil
}
func (c *accessClaims) GetNotBefore() (*jwt.NumericDate, error) { return nil, nil }
func (c *accessClaims) GetIssuer() (string, error)              { return c.Issuer, nil }
func (c *accessClaims) GetSubject() (string, error)             { return c.Subject, nil }
func (c *accessClaims) GetAudience() (jwt.ClaimStrings, error) {
	return jwt.ClaimStrings(c.Audience), nil
}

// audience is an access token's aud: one string, or an array when the
// token is for several resources (RFC 7519 §4.1.3, RFC 8707 §2.2).
type audience []string

// MarshalJSON encodes a as a JSON string when it has one member, an
// array otherwise.
func (a audience) MarshalJSON() ([]byte, error) {
	if len(a) == 1 {
		return json.Marshal(a[0])
	}
	return json.Marshal([]string(a))
}

// newAccessTokenID returns 16 random bytes, base64url-encoded.
func newAccessTokenID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go ≥ 1.24)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// mintAccessToken signs an access token of grant (a family ID) for userID
// and clientID at now. scopes are joined with spaces; unrestricted marks a
// legacy grant; resources, when not empty, are its aud (RFC 8707), else
// Config.Audience.
func (s *Server) mintAccessToken(ctx context.Context, now time.Time, grant string, userID int64, clientID string, scopes []string, unrestricted bool, jkt string, resources []string) (string, error) {
	_, span := data.StartSpan(ctx, tracer, "", "sign access token")
	defer span.End()
	sub := clientID // a token without a user (client_credentials): RFC 9068 §2.2
	if userID != 0 {
		sub = strconv.FormatInt(userID, 10)
	}
	iat := now.Unix()
	aud := audience(resources)
	if len(aud) == 0 {
		aud = s.defaultAud
	}
	claims := &accessClaims{
		Issuer:    s.cfg.Issuer,
		Subject:   sub,
		Audience:  aud,
		IssuedAt:  iat,
		ExpiresAt: iat + int64(s.cfg.AccessTTL/time.Second),
		ID:        newAccessTokenID(),
		ClientID:  clientID,
		GrantID:   grant,
		Cnf:       cnfOf(jkt),
	}
	if unrestricted {
		claims.Unrestricted = true
	} else {
		claims.Scope = strings.Join(scopes, " ")
	}
	tok, err := s.cfg.Signer.Sign(claims)
	if err != nil {
		return "", fmt.Errorf("sign access token: %w", err)
	}
	return tok, nil
}

// pendingToken is an access token being signed on a goroutine of its own.
type pendingToken struct {
	done chan struct{}
	tok  string
	err  error
}

// startAccessToken starts signing an access token (see mintAccessToken)
// and returns at once; its span is a child of ctx's, whichever goroutine
// signs. The grant callbacks call it from inside the store's
// transaction, so that the signature is computed while the store commits
// (a group commit waits for an fsync) instead of after it. The caller
// calls wait only once the store has reported the grant durable; when the
// store fails the token is simply dropped, never sent. A callback the
// store runs again (a retried transaction) starts a new token and the
// earlier one is dropped. scopes and resources are copied: the store keeps
// using the family's slices.
func (s *Server) startAccessToken(ctx context.Context, now time.Time, grant string, userID int64, clientID string, scopes []string, unrestricted bool, jkt string, resources []string) *pendingToken {
	p := &pendingToken{done: make(chan struct{})}
	scopes = slices.Clone(scopes)
	resources = slices.Clone(resources)
	go func() {
		p.tok, p.err = s.mintAccessToken(ctx, now, grant, userID, clientID, scopes, unrestricted, jkt, resources)
		close(p.done)
	}()
	return p
}

// startMachineToken starts signing an access token without a user and
// without a grant (client_credentials): its sub is the client ID (RFC 9068
// §2.2) and it carries no grant_id; resources (RFC 8707), when given, are
// its aud.
func (s *Server) startMachineToken(ctx context.Context, now time.Time, clientID string, scopes []string, jkt string, resources []string) *pendingToken {
	return s.startAccessToken(ctx, now, "", 0, clientID, scopes, false, jkt, resources)
}

// wait returns the signed token. A nil p (a store that reported success
// without calling the grant callback, which none does) is an error, never
// an unsigned token.
func (p *pendingToken) wait() (string, error) {
	if p == nil {
		return "", errors.New("sign access token: the store did not run the grant callback")
	}
	<-p.done
	return p.tok, p.err
}
