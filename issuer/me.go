package issuer

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/data/oauth"
	"oauthd/data/scope"
	"oauthd/keys/guard"
)

// meScope is the scope /v2/me requires (or an unrestricted legacy token).
const meScope = "PROFILE_READ"

// meProfile is the data of the /v2/me response.
type meProfile struct {
	ID       int64  `json:"id"`
	Email    string `json:"email"`
	Username string `json:"username"`
	Name     string `json:"name"`
	TimeZone string `json:"timeZone"`
}

type meResponse struct {
	Status string    `json:"status"`
	Data   meProfile `json:"data"`
}

// handleMe serves GET /v2/me: the profile of the user the access token was
// issued for. Config.MeAuth has verified the token and the scope already;
// the checks here are a second line of defence. A token whose grant was
// revoked, or whose client is no longer approved, is refused here at once
// (grantLive), unlike at resource servers that verify offline.
func (s *Server) handleMe(c echo.Context) error {
	ctx := c.Request().Context()
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	claims, ok := guard.ClaimsFrom(ctx)
	if !ok && len(c.Request().Header.Values("Authorization")) == 0 {
		// No credentials at all: a bare challenge, no error information
		// (RFC 6750 §3.1).
		h.Set("WWW-Authenticate", "Bearer")
		return c.NoContent(http.StatusUnauthorized)
	}
	if !ok {
		return meInvalidToken(c, "the request carries no valid access token")
	}
	switch live, err := s.grantLive(ctx, claims); {
	case err != nil:
		return fmt.Errorf("me: %w", err)
	case !live:
		s.metrics.grantRefused.Inc()
		return meInvalidToken(c, "the token's grant was revoked")
	}
	if _, covered := scope.Covers(claims.Scopes, []string{meScope}); !claims.Unrestricted && !covered {
		h.Set("WWW-Authenticate", `Bearer error="`+oauth.InsufficientScope+`", scope="`+meScope+`"`)
		granted := claims.Scopes
		if granted == nil {
			granted = []string{}
		}
		return c.JSON(http.StatusForbidden, oauth.ScopeErrorBody{
			Error:          oauth.InsufficientScope,
			Description:    "the token's scopes do not cover this route: it requires " + meScope,
			RequiredScopes: []string{meScope},
			GrantedScopes:  granted,
		})
	}
	id, err := strconv.ParseInt(claims.Subject, 10, 64)
	if err != nil || id <= 0 {
		return meInvalidToken(c, "the token's subject is not a user")
	}
	u, err := s.store.GetUser(ctx, id)
	if errors.Is(err, data.ErrNotFound) {
		return meInvalidToken(c, "the token's user no longer exists")
	}
	if err != nil {
		return fmt.Errorf("me: get user %d: %w", id, err)
	}
	return c.JSON(http.StatusOK, meResponse{Status: "success", Data: meProfile{
		ID: u.ID, Email: u.Email, Username: u.Username, Name: u.Name, TimeZone: u.TimeZone,
	}})
}

// meInvalidToken answers 401 with WWW-Authenticate: Bearer
// error="invalid_token" (RFC 6750 §3.1).
func meInvalidToken(c echo.Context, desc string) error {
	c.Response().Header().Set("WWW-Authenticate", `Bearer error="`+oauth.InvalidToken+`"`)
	return c.JSON(http.StatusUnauthorized, oauth.ErrorBody{Error: oauth.InvalidToken, Description: desc})
}
