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
	"oauthd/keys/verify"
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
	c.Response().Header().Set("Cache-Control", "no-store")
	covered := func(cl *verify.Claims) bool {
		_, ok := scope.Covers(cl.Scopes, []string{meScope})
		return cl.Unrestricted || ok
	}
	_, u, ok, err := s.tokenUser(c, "me", meScope, covered, "the token's scopes do not cover this route: it requires "+meScope)
	if !ok {
		return err
	}
	return c.JSON(http.StatusOK, meResponse{Status: "success", Data: meProfile{
		ID: u.ID, Email: u.Email, Username: u.Username, Name: u.Name, TimeZone: u.TimeZone,
	}})
}

// tokenUser is what every endpoint that answers with the user an access
// token names (/v2/me, userinfo) checks first, in one place: the token's
// claims (Config.MeAuth verified the token; this is a second line of
// defence), its grant still live (grantLive: a revoked grant, or a client
// no longer approved, is refused at once, unlike at resource servers that
// verify offline), the route's scope (covered, else 403 naming required),
// and the user it was issued for. When the request is refused it has
// written the RFC 6750 §3.1 answer and returns ok false with the error to
// return (nil, or one for the error handler).
func (s *Server) tokenUser(c echo.Context, op, required string, covered func(*verify.Claims) bool, uncovered string) (*verify.Claims, data.User, bool, error) {
	ctx := c.Request().Context()
	h := c.Response().Header()
	claims, ok := guard.ClaimsFrom(ctx)
	if !ok && len(c.Request().Header.Values("Authorization")) == 0 {
		// No credentials at all: a bare challenge, no error information
		// (RFC 6750 §3.1).
		h.Set("WWW-Authenticate", "Bearer")
		return nil, data.User{}, false, c.NoContent(http.StatusUnauthorized)
	}
	if !ok {
		return nil, data.User{}, false, meInvalidToken(c, "the request carries no valid access token")
	}
	switch live, err := s.grantLive(ctx, claims); {
	case err != nil:
		return nil, data.User{}, false, fmt.Errorf("%s: %w", op, err)
	case !live:
		s.metrics.grantRefused.Inc()
		return nil, data.User{}, false, meInvalidToken(c, "the token's grant was revoked")
	}
	if !claims.HasUser() {
		// A valid token that is not enough for this route: it acts for
		// no user (client_credentials), and the route answers with one.
		h.Set("WWW-Authenticate", `Bearer error="`+oauth.InsufficientScope+`", scope="`+required+`"`)
		return nil, data.User{}, false, c.JSON(http.StatusForbidden, oauth.ScopeErrorBody{
			Error:          oauth.InsufficientScope,
			Description:    "the token acts for no user: client " + claims.ClientID + " got it for itself (client_credentials); this route answers with a user's data",
			RequiredScopes: []string{required},
			GrantedScopes:  append([]string{}, claims.Scopes...),
		})
	}
	if !covered(claims) {
		h.Set("WWW-Authenticate", `Bearer error="`+oauth.InsufficientScope+`", scope="`+required+`"`)
		granted := claims.Scopes
		if granted == nil {
			granted = []string{}
		}
		return nil, data.User{}, false, c.JSON(http.StatusForbidden, oauth.ScopeErrorBody{
			Error:          oauth.InsufficientScope,
			Description:    uncovered,
			RequiredScopes: []string{required},
			GrantedScopes:  granted,
		})
	}
	id, err := strconv.ParseInt(claims.Subject, 10, 64)
	if err != nil || id <= 0 {
		return nil, data.User{}, false, meInvalidToken(c, "the token's subject is not a user")
	}
	u, err := s.store.GetUser(ctx, id)
	if errors.Is(err, data.ErrNotFound) {
		return nil, data.User{}, false, meInvalidToken(c, "the token's user no longer exists")
	}
	if err != nil {
		return nil, data.User{}, false, fmt.Errorf("%s: get user %d: %w", op, id, err)
	}
	return claims, u, true, nil
}

// meInvalidToken answers 401 with WWW-Authenticate: Bearer
// error="invalid_token" (RFC 6750 §3.1).
func meInvalidToken(c echo.Context, desc string) error {
	c.Response().Header().Set("WWW-Authenticate", `Bearer error="`+oauth.InvalidToken+`"`)
	return c.JSON(http.StatusUnauthorized, oauth.ErrorBody{Error: oauth.InvalidToken, Description: desc})
}
