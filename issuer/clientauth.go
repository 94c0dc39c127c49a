package issuer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/issuer/throttle"
)

// secretTouchInterval is how stale a secret's LastUsedAt may get before a
// successful authentication writes it again, so that the hot path does not
// write on every request.
const secretTouchInterval = time.Minute

// Limits of failed client authentications (the token, revocation and
// introspection endpoints share them). Client secrets are 256-bit random
// values, so these limits do not slow guessing down (nothing could); they
// save the CPU and the log lines of a flood. They are per client ID *and
// source address*: client IDs are public, and a limit per client ID alone
// would let anyone lock a client out. The address ceiling covers a spray
// over many client IDs from one address.
var tokenLimits = throttle.Rules{
	throttle.Client: {Burst: 10, Every: 6 * time.Second}, // 10 at once, then 10 a minute
	throttle.Addr:   {Burst: 30, Every: 2 * time.Second}, // 30 at once, then 30 a minute
}

// authenticateClient authenticates the client of a token, revocation or
// introspection request (RFC 6749 §2.3.1): HTTP Basic or client_id and
// client_secret in the body, never both; a public client sends only its
// client_id. Failures are invalid_client (401) and count against (client
// ID, source address) and the source address (issuer/throttle); once
// either key has used up its failures, authentications under it answer
// 429 with Retry-After, without checking the secret (else the limit would
// still be an oracle), until the budget refills by itself. The same client
// from another address is unaffected. Failures are counted when they
// happen, not when the attempt starts: comparing a secret's hash costs
// next to nothing, and a client may legitimately send many requests at
// once, which must never hold each other's budget.
//
// It returns an *Error for every client mistake and a plain error only for
// a storage failure.
func (s *Server) authenticateClient(ctx context.Context, c echo.Context, req *tokenRequest) (data.Client, error) {
	ctx, span := data.StartSpan(ctx, tracer, "", "client authentication")
	defer span.End()
	id, secret, assertion, e := presentedClient(req)
	if e != nil {
		return data.Client{}, e
	}
	now := s.now()
	addr := c.RealIP()
	lim := s.tok.limiter
	ip := throttle.ParseAddr(addr)
	var ks throttle.Keys
	ks.Add(lim.NameKey(throttle.Client, id, ip))
	ks.Add(throttle.AddrKey(ip))
	if wait, ok := lim.Check(ctx, ks); !ok {
		return data.Client{}, tooMany(wait)
	}
	fail := func(e *Error) (data.Client, error) {
		lim.Fail(ctx, ks)
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
	switch {
	case assertion && !client.HasKeys():
		return fail(WithDescription(ErrInvalidClient, "the client has no registered keys; it authenticates with its secret (client_secret_basic or client_secret_post)"))
	case assertion:
		e, err := s.checkAssertion(ctx, c, client, req, now)
		if err != nil {
			return data.Client{}, err
		}
		if e != nil {
			return fail(e)
		}
	default:
		if matched, e = checkSecret(client, secret); e != nil {
			return fail(e)
		}
	}
	if client.Status != data.StatusApproved {
		return data.Client{}, WithDescription(ErrInvalidClient, "client is not approved")
	}
	if matched >= 0 && now.Sub(client.Secrets[matched].LastUsedAt) > secretTouchInterval {
		s.touchSecret(ctx, client.ID, client.Secrets[matched].ID, now)
	}
	s.allowOrigin(c, client)
	return client, nil
}

// presentedClient returns the client ID and secret that req presents
// (HTTP Basic or the body, never both with differing IDs or two secrets)
// and whether it presents a client assertion (private_key_jwt) instead of
// a secret; an *Error when it presents no usable client credentials.
func presentedClient(req *tokenRequest) (id, secret string, assertion bool, e *Error) {
	id, secret = req.ClientID, req.ClientSecret
	assertion = req.Form.Get("client_assertion") != "" || req.Form.Get("client_assertion_type") != ""
	if assertion {
		if id, e = assertionClientID(req); e != nil {
			return "", "", true, e
		}
	} else if req.Basic {
		if req.ClientSecret != "" {
			return "", "", false, tokBadRequest("use one client authentication method: HTTP Basic or client_secret in the body, not both")
		}
		if req.ClientID != "" && req.ClientID != req.BasicID {
			return "", "", false, tokBadRequest("client_id in the body differs from the HTTP Basic client ID")
		}
		id, secret = req.BasicID, req.BasicSecret
	}
	if id == "" {
		return "", "", assertion, WithDescription(ErrInvalidClient, "client authentication is required: send client_id (and client_secret) or use HTTP Basic")
	}
	return id, secret, assertion, nil
}

// checkSecret decides the authentication of client by secret (a public
// client by its client_id alone): the index of the secret of client that
// matches (-1 for a public client), or the invalid_client error. Every
// stored secret is compared, in constant time, with no early exit.
func checkSecret(client data.Client, secret string) (matched int, e *Error) {
	switch {
	case client.HasKeys():
		return -1, WithDescription(ErrInvalidClient, "the client authenticates with private_key_jwt: send client_assertion_type and client_assertion")
	case client.Type == data.Public:
		if secret != "" {
			return -1, WithDescription(ErrInvalidClient, "a public client has no secret; send only client_id")
		}
		return -1, nil
	}
	if secret == "" {
		return -1, WithDescription(ErrInvalidClient, "client_secret is required")
	}
	matched = -1
	h := data.Hash(secret)
	for i := range client.Secrets { // every secret, no early exit
		if data.Equal(h, client.Secrets[i].Hash) {
			matched = i
		}
	}
	if matched < 0 {
		return -1, WithDescription(ErrInvalidClient, "wrong client credentials")
	}
	return matched, nil
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
	switch {
	case Unavailable(err):
		s.cfg.Outage.Noticed(ctx, err) // logged once per outage, not per request
	case err != nil:
		s.log.WarnContext(ctx, "record secret use", slog.String("client_id", clientID), slog.Any("err", err))
	}
}

// tooMany is the 429 of a limited client or address.
func tooMany(wait time.Duration) *Error {
	secs := int((wait + time.Second - 1) / time.Second)
	e := WithDescription(ErrTooManyRequests, "too many failed client authentications from this address; retry after %d seconds", secs)
	e.retryAfter = secs
	return e
}
