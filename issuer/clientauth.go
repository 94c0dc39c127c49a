package issuer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/data"
)

// secretTouchInterval is how stale a secret's LastUsedAt may get before a
// successful authentication writes it again, so that the hot path does not
// write on every request.
const secretTouchInterval = time.Minute

// authenticateClient authenticates the client of a token, revocation or
// introspection request (RFC 6749 §2.3.1): HTTP Basic or client_id and
// client_secret in the body, never both; a public client sends only its
// client_id. Failures are invalid_client (401) and count against the
// client ID and the source address; once either has used up its failures,
// every authentication for it answers 429 with Retry-After, without
// checking the secret (else the limit would still be an oracle), until the
// bucket refills by itself. Successes are never counted.
//
// It returns an *Error for every client mistake and a plain error only for
// a storage failure.
func (s *Server) authenticateClient(ctx context.Context, c echo.Context, req *tokenRequest) (data.Client, error) {
	id, secret := req.ClientID, req.ClientSecret
	if req.Basic {
		if req.ClientSecret != "" {
			return data.Client{}, tokBadRequest("use one client authentication method: HTTP Basic or client_secret in the body, not both")
		}
		if req.ClientID != "" && req.ClientID != req.BasicID {
			return data.Client{}, tokBadRequest("client_id in the body differs from the HTTP Basic client ID")
		}
		id, secret = req.BasicID, req.BasicSecret
	}
	if id == "" {
		return data.Client{}, WithDescription(ErrInvalidClient, "client authentication is required: send client_id (and client_secret) or use HTTP Basic")
	}
	now := s.now()
	addr := c.RealIP()
	clientKey, addrKey := "c:"+id, "a:"+addr
	lim := s.tok.limiter
	if wait, blocked := lim.blocked(addrKey, now); blocked {
		return data.Client{}, tooMany(wait)
	}
	if wait, blocked := lim.blocked(clientKey, now); blocked {
		return data.Client{}, tooMany(wait)
	}
	fail := func(e *Error) (data.Client, error) {
		lim.fail(clientKey, now)
		lim.fail(addrKey, now)
		s.log.LogAttrs(ctx, slog.LevelInfo, "audit",
			slog.String("event", "client_auth_failed"),
			slog.String("client_id", id),
			slog.String("remote_addr", addr),
			slog.String("reason", e.Description))
		return data.Client{}, e
	}

	client, err := s.store.GetClient(ctx, id)
	if errors.Is(err, data.ErrNotFound) {
		return fail(WithDescription(ErrInvalidClient, "unknown client"))
	}
	if err != nil {
		return data.Client{}, fmt.Errorf("authenticate client: %w", err)
	}
	matched := -1
	switch client.Type {
	case data.Public:
		if secret != "" {
			return fail(WithDescription(ErrInvalidClient, "a public client has no secret; send only client_id"))
		}
	default:
		if secret == "" {
			return fail(WithDescription(ErrInvalidClient, "client_secret is required"))
		}
		h := data.Hash(secret)
		for i := range client.Secrets { // every secret, no early exit
			if data.Equal(h, client.Secrets[i].Hash) {
				matched = i
			}
		}
		if matched < 0 {
			return fail(WithDescription(ErrInvalidClient, "wrong client credentials"))
		}
	}
	if client.Status != data.StatusApproved {
		return data.Client{}, WithDescription(ErrInvalidClient, "client is not approved")
	}
	if matched >= 0 && now.Sub(client.Secrets[matched].LastUsedAt) > secretTouchInterval {
		s.touchSecret(ctx, client.ID, client.Secrets[matched].ID, now)
	}
	return client, nil
}

// touchSecret sets a secret's LastUsedAt. A failure is logged, not
// returned: the client did authenticate.
func (s *Server) touchSecret(ctx context.Context, clientID, secretID string, now time.Time) {
	_, err := s.store.UpdateClient(ctx, clientID, func(c data.Client) (data.Client, error) {
		for i := range c.Secrets {
			if c.Secrets[i].ID == secretID && now.After(c.Secrets[i].LastUsedAt) {
				c.Secrets[i].LastUsedAt = now
			}
		}
		return c, nil
	})
	if err != nil {
		s.log.WarnContext(ctx, "record secret use", slog.String("client_id", clientID), slog.Any("err", err))
	}
}

// tooMany is the 429 of a limited client or address.
func tooMany(retryAfter int) *Error {
	e := WithDescription(ErrTooManyRequests, "too many failed client authentications; retry after %d seconds", retryAfter)
	e.retryAfter = retryAfter
	return e
}
