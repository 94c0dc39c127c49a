package issuer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"oauthd/data"
	"oauthd/data/netsafe"
	"oauthd/keys/verify"
)

// private_key_jwt (RFC 7523 §2.2, §3; OpenID Connect Core §9): a client
// whose record holds keys (data.Client.JWKS or JWKSURI) authenticates at
// the token, PAR, revocation and introspection endpoints with a
// client_assertion signed by one of them, never with a secret. The
// assertion's rules are verify.VerifyAssertion's; its jti is recorded
// (data.Store.UseNonce: every replica, swept after exp) only once the
// signature and claims have passed, so an assertion nobody could sign
// never burns a jti.

// jwksTTL is how long a fetched jwks_uri document is used; jwksRefetch
// how soon an unknown kid may fetch it again (a rotation at the client).
const (
	jwksTTL     = 5 * time.Minute
	jwksRefetch = 30 * time.Second
	// maxJWKSBytes bounds a fetched jwks_uri document.
	maxJWKSBytes = 64 << 10
)

// clientKeyCache keeps each client's parsed keys: an inline set by its
// text, a jwks_uri's by fetch time.
type clientKeyCache struct {
	fetch *netsafe.Client
	mu    sync.Mutex
	m     map[string]*clientKeys // client ID → keys
}

type clientKeys struct {
	src     string // the JWKS text or the jwks_uri
	set     jwk.Set
	fetched time.Time
}

// keysOf returns the AssertionKeys of client at now.
func (kc *clientKeyCache) keysOf(client data.Client, now time.Time) verify.AssertionKeys {
	return func(ctx context.Context, refresh bool) (jwk.Set, error) {
		src := client.JWKS
		if src == "" {
			src = client.JWKSURI
		}
		kc.mu.Lock()
		e := kc.m[client.ID]
		kc.mu.Unlock()
		if e != nil && e.src == src && (client.JWKS != "" || (now.Sub(e.fetched) < jwksTTL && !(refresh && now.Sub(e.fetched) >= jwksRefetch))) {
			return e.set, nil
		}
		if refresh && client.JWKS != "" {
			return e.set, nil
		}
		raw := []byte(client.JWKS)
		if client.JWKS == "" {
			resp, err := kc.fetch.Get(ctx, client.JWKSURI, "application/jwk-set+json, application/json", maxJWKSBytes)
			if err != nil {
				if e != nil && e.src == src {
					return e.set, nil // keep the last good set while the URL fails
				}
				return nil, fmt.Errorf("%w: the client's jwks_uri could not be fetched: %v", verify.ErrInvalidAssertion, err)
			}
			raw = resp.Body
		}
		set, err := verify.ParseClientJWKS(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: the client's JWK set: %v", verify.ErrInvalidAssertion, err)
		}
		kc.mu.Lock()
		if len(kc.m) > 10000 {
			clear(kc.m) // bounded: one entry per client that authenticated
		}
		kc.m[client.ID] = &clientKeys{src: src, set: set, fetched: now}
		kc.mu.Unlock()
		return set, nil
	}
}

// assertionClientID returns the client ID of a request that carries a
// client_assertion: client_id when sent (it must be the assertion's),
// else the assertion's iss (unverified: only to find the keys).
func assertionClientID(req *tokenRequest) (string, *Error) {
	if req.Basic || req.ClientSecret != "" {
		return "", tokBadRequest("use one client authentication method: client_assertion, not also a secret")
	}
	if t := req.Form.Get("client_assertion_type"); t != verify.AssertionType {
		return "", tokBadRequest("client_assertion_type must be %s", verify.AssertionType)
	}
	iss, err := verify.PeekAssertionClient(req.Form.Get("client_assertion"))
	if err != nil {
		return "", WithDescription(ErrInvalidClient, "client_assertion is not a signed JWT with an iss")
	}
	if req.ClientID != "" && req.ClientID != iss {
		return "", WithDescription(ErrInvalidClient, "client_id differs from the client assertion's iss")
	}
	return iss, nil
}

// checkAssertion verifies the request's client assertion for client and
// spends its jti. endpoint is the URL of the endpoint called: the
// assertion's aud may be it, the token endpoint or the issuer.
func (s *Server) checkAssertion(ctx context.Context, c echo.Context, client data.Client, req *tokenRequest, now time.Time) (*Error, error) {
	endpoint := s.cfg.Issuer + c.Request().URL.Path
	auds := []string{s.cfg.Issuer, s.cfg.Issuer + tokenEndpointPath, endpoint}
	a, err := verify.VerifyAssertion(ctx, req.Form.Get("client_assertion"), client.ID, s.clientKeys.keysOf(client, now), auds, now)
	if err != nil {
		if errors.Is(err, verify.ErrInvalidAssertion) {
			return WithDescription(ErrInvalidClient, "%s", err.Error()), nil
		}
		return nil, fmt.Errorf("client assertion: %w", err)
	}
	key := sha256.Sum256([]byte("client_assertion\x00" + client.ID + "\x00" + a.JTI))
	switch err := s.store.UseNonce(ctx, key[:], a.Expires.Add(verify.DefaultLeeway)); {
	case errors.Is(err, data.ErrExists):
		return WithDescription(ErrInvalidClient, "the client assertion's jti was already used; sign a new assertion for every request"), nil
	case err != nil:
		return nil, fmt.Errorf("client assertion: record jti: %w", err)
	}
	return nil, nil
}
