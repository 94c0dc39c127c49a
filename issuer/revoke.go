package issuer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/data"
)

// handleRevoke is POST /v2/auth/oauth2/revoke (RFC 7009). The client
// authenticates as at the token endpoint. Revoking one of its refresh
// tokens that still refreshes (the current one, or the previous one within
// the reuse grace), or one of its access tokens, revokes the whole family
// (RFC 7009 §2.1 allows revoking the related tokens), and the family's
// access tokens become invalid at /v2/me and inactive at introspection at
// once. A token that is unknown, invalid, older or another client's is answered
// 200 and changes nothing (RFC 7009 §2.2). An access token issued before
// tokens named their grant cannot be tied to one: unsupported_token_type
// (§2.2.1); it expires within 30 minutes. token_type_hint is accepted and
// ignored: the token's form says what it is, and §2.1 has the server
// search every type anyway.
func (s *Server) handleRevoke(c echo.Context) error {
	if err := s.revoke(c); err != nil {
		return writeOAuthError(c, toOAuthError(c, s.log, s.cfg.Outage, err))
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	return c.NoContent(http.StatusOK)
}

func (s *Server) revoke(c echo.Context) error {
	ctx := c.Request().Context()
	req, perr := parseTokenRequest(c.Request())
	if perr != nil {
		return perr
	}
	client, err := s.authenticateClient(ctx, c, &req)
	if err != nil {
		return err
	}
	if req.Token == "" {
		return tokBadRequest("token is required")
	}
	familyID, ok := data.ParseRefreshToken(req.Token)
	if !ok {
		if looksLikeJWT(req.Token) {
			return s.revokeAccessToken(c, client, req.Token)
		}
		return nil
	}
	fam, ok, err := s.familyOf(ctx, familyID, client)
	if err != nil || !ok {
		return err
	}
	// Only a token that still refreshes revokes: the current one, or the
	// previous one within the reuse grace (it would refresh once more, so a
	// client that lost the rotation's response revokes with it). An older
	// token is not treated as reuse here: revocation must not become a way
	// to revoke others' grants.
	if v := s.judgeToken(&fam, req.Token, s.now()); v != rotateCurrent && v != rotateGrace && v != rotateAhead {
		return nil
	}
	return s.revokeFamily(ctx, c, client, fam)
}

// revokeAccessToken revokes the grant of an access token issued to client.
func (s *Server) revokeAccessToken(c echo.Context, client data.Client, token string) error {
	ctx := c.Request().Context()
	claims, err := s.cfg.Verifier.Verify(ctx, token)
	if err != nil || claims.ClientID != client.ID {
		return nil // invalid, expired or another client's: 200, nothing changes
	}
	if claims.GrantID == "" && !claims.HasUser() {
		// client_credentials: no grant is stored that a revocation could
		// end (RFC 7009 §2.2.1 lets a server refuse access tokens).
		return WithDescription(ErrUnsupportedTokenType, "a client_credentials access token names no grant to revoke; it expires within %d minutes (to stop the client's tokens, revoke its secret or reject it)", int(s.cfg.AccessTTL/time.Minute))
	}
	if claims.GrantID == "" {
		return WithDescription(ErrUnsupportedTokenType, "this access token was issued before access tokens named their grant; revoke the refresh token (the access token expires within 30 minutes)")
	}
	fam, ok, err := s.familyOf(ctx, claims.GrantID, client)
	if err != nil || !ok {
		return err
	}
	return s.revokeFamily(ctx, c, client, fam)
}

// familyOf returns the family id if it is a grant of client; ok is false
// when it is unknown or another client's (revocation answers 200 and
// changes nothing, RFC 7009 §2.2).
func (s *Server) familyOf(ctx context.Context, id string, client data.Client) (fam data.Family, ok bool, err error) {
	fam, err = s.store.GetFamily(ctx, id)
	switch {
	case errors.Is(err, data.ErrNotFound):
		return data.Family{}, false, nil
	case err != nil:
		return data.Family{}, false, fmt.Errorf("revoke: %w", err)
	}
	return fam, fam.ClientID == client.ID, nil
}

// revokeFamily revokes fam, a grant of client, with every token it issued.
func (s *Server) revokeFamily(ctx context.Context, c echo.Context, client data.Client, fam data.Family) error {
	if err := s.store.DeleteFamily(ctx, fam.ID); err != nil && !errors.Is(err, data.ErrNotFound) {
		return fmt.Errorf("revoke: %w", err)
	}
	s.audit(ctx, c, "token_revoked", client.ID, fam.UserID)
	return nil
}

// looksLikeJWT reports whether token has the form of a JWS compact
// serialization with a JSON header (three base64url parts, "eyJ…").
func looksLikeJWT(token string) bool {
	return strings.HasPrefix(token, "eyJ") && strings.Count(token, ".") == 2
}
