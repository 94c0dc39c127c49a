package issuer

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/data/oauth"
	"oauthd/data/scope"
	"oauthd/keys/guard"
)

// userinfoPath is the UserInfo endpoint (OpenID Connect Core §5.3).
const userinfoPath = "/v2/auth/oauth2/userinfo"

// UserinfoTable is the route table of the userinfo endpoint's guard
// (Config.UserinfoAuth): GET and POST need the openid scope.
func UserinfoTable() *guard.Table {
	t, err := guard.LoadTable(strings.NewReader(`[
  {"method": "GET", "path": "` + userinfoPath + `", "scopes": ["openid"]},
  {"method": "POST", "path": "` + userinfoPath + `", "scopes": ["openid"]}
]`))
	if err != nil {
		panic("issuer: userinfo route table: " + err.Error()) // constant input
	}
	return t
}

// userinfoResponse is the UserInfo response (Core §5.3.2): sub, which is
// the ID token's, and the claims the token's scopes release.
type userinfoResponse struct {
	Subject string `json:"sub"`
	userClaims
}

// handleUserinfo serves GET and POST /v2/auth/oauth2/userinfo (Core
// §5.3.1) with an access token (Bearer or DPoP; Config.MeAuth, as for
// /v2/me, checks it, its DPoP proof, its grant and the route table's
// openid rule). The token must carry openid: an unrestricted legacy token
// is not an OpenID Connect grant. A revoked grant is 401 invalid_token at
// once, as at /v2/me.
func (s *Server) handleUserinfo(c echo.Context) error {
	ctx := c.Request().Context()
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	claims, ok := guard.ClaimsFrom(ctx)
	if !ok {
		return meInvalidToken(c, "the request carries no valid access token")
	}
	switch live, err := s.grantLive(ctx, claims); {
	case err != nil:
		return fmt.Errorf("userinfo: %w", err)
	case !live:
		s.metrics.grantRefused.Inc()
		return meInvalidToken(c, "the token's grant was revoked")
	}
	if !slices.Contains(claims.Scopes, scope.OpenID) {
		h.Set("WWW-Authenticate", `Bearer error="`+oauth.InsufficientScope+`", scope="`+scope.OpenID+`"`)
		granted := claims.Scopes
		if granted == nil {
			granted = []string{}
		}
		return c.JSON(http.StatusForbidden, oauth.ScopeErrorBody{
			Error:          oauth.InsufficientScope,
			Description:    "the userinfo endpoint requires a token with the openid scope",
			RequiredScopes: []string{scope.OpenID},
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
		return fmt.Errorf("userinfo: get user %d: %w", id, err)
	}
	if c.Request().Header.Get("Origin") != "" {
		// CORS (cors.go): only an origin of the token's own client.
		if client, err := s.store.GetClient(ctx, claims.ClientID); err == nil {
			s.allowOrigin(c, client)
		}
	}
	return c.JSON(http.StatusOK, userinfoResponse{Subject: claims.Subject, userClaims: claimsFor(u, claims.Scopes)})
}
