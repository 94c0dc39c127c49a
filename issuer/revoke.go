package issuer

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"oauthd/data"
)

// handleRevoke is POST /v2/auth/oauth2/revoke (RFC 7009). The client
// authenticates as at the token endpoint. Revoking one of its refresh
// tokens revokes the whole family; a token that is unknown, not current or
// another client's is answered 200 and changes nothing (RFC 7009 §2.2).
// Access tokens are short-lived JWTs that cannot be revoked one by one:
// they get unsupported_token_type (RFC 7009 §2.2.1). token_type_hint is
// accepted and ignored: the token's form says what it is.
func (s *Server) handleRevoke(c echo.Context) error {
	if err := s.revoke(c); err != nil {
		return writeOAuthError(c, toOAuthError(c, s.log, err))
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
			return WithDescription(ErrUnsupportedTokenType, "access tokens are short-lived JWTs; revoke the refresh token")
		}
		return nil
	}
	fam, err := s.store.GetFamily(ctx, familyID)
	switch {
	case errors.Is(err, data.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("revoke: %w", err)
	}
	// A token that is not the family's current one is not treated as reuse
	// here: revocation must not become a way to revoke others' grants.
	if fam.ClientID != client.ID || !data.Equal(data.Hash(req.Token), fam.TokenHash) {
		return nil
	}
	if err := s.store.DeleteFamily(ctx, familyID); err != nil && !errors.Is(err, data.ErrNotFound) {
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
