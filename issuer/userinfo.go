package issuer

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"oauthd/data/scope"
	"oauthd/keys/guard"
	"oauthd/keys/verify"
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
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	covered := func(cl *verify.Claims) bool { return slices.Contains(cl.Scopes, scope.OpenID) }
	claims, u, ok, err := s.tokenUser(c, "userinfo", scope.OpenID, covered, "the userinfo endpoint requires a token with the openid scope")
	if !ok {
		return err
	}
	if c.Request().Header.Get("Origin") != "" {
		// CORS (cors.go): only an origin of the token's own client.
		if client, err := s.store.GetClient(c.Request().Context(), claims.ClientID); err == nil {
			s.allowOrigin(c, client)
		}
	}
	return c.JSON(http.StatusOK, userinfoResponse{Subject: claims.Subject, userClaims: claimsFor(u, claims.Scopes)})
}
