package issuer

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/data"
)

// CORS (the issue "Beyond the peers", item 1). Browsers may call:
//
//   - the token and revocation endpoints from an origin of the client's own
//     registered redirect URIs, public clients only ([data.AllowedOrigins]):
//     a preflight (which has no body, so no client) is answered for any
//     origin that some approved public client allows; the actual request
//     gets Access-Control-Allow-Origin only once the client has
//     authenticated and the origin is one of *that* client's;
//   - the userinfo endpoint (OpenID Connect) the same way: the preflight
//     for any approved public client's origin, the answer only for an
//     origin of the client the access token was issued to;
//   - the metadata (RFC 8414 and OpenID Connect Discovery), the JWKS and
//     the revoked-grants feed from any origin (public documents, read
//     without credentials: "*").
//
// Nothing else ever answers CORS: not the authorization, login, consent or
// settings pages, not introspection. Access-Control-Allow-Credentials is
// never sent: these endpoints use no cookies.

// Paths with CORS.
const (
	tokenPath     = "/v2/auth/oauth2/token"
	revokePath    = "/v2/auth/oauth2/revoke"
	metadataPath  = "/.well-known/oauth-authorization-server"
	discoveryPath = "/.well-known/openid-configuration"
	jwksPath      = "/.well-known/jwks.json"
)

// corsOriginsTTL bounds how long the set of origins preflights are
// answered for is reused before the clients are listed again.
const corsOriginsTTL = 2 * time.Second

// corsState is the set of origins of every approved public client.
type corsState struct {
	list func(ctx context.Context) ([]data.Client, error)
	now  func() time.Time

	mu      sync.Mutex
	origins map[string]bool
	built   time.Time
}

func (s *Server) registerCORS(e *echo.Echo) {
	s.cors = &corsState{now: s.now, list: func(ctx context.Context) ([]data.Client, error) {
		return s.store.ListClients(ctx, data.StatusApproved)
	}}
	e.OPTIONS(tokenPath, s.handlePreflight)
	e.OPTIONS(revokePath, s.handlePreflight)
	e.OPTIONS(parPath, s.handlePreflight) // a browser client pushes its requests too (RFC 9126)
	e.OPTIONS(userinfoPath, s.handlePreflight)
	e.Use(corsHeaders)
}

// corsHeaders marks the responses of the token and revocation endpoints
// as varying with Origin, and opens the public documents to every origin.
func corsHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		switch c.Path() {
		case tokenPath, revokePath, parPath, userinfoPath:
			c.Response().Header().Add("Vary", "Origin")
		case metadataPath, discoveryPath, jwksPath:
			c.Response().Header().Set("Access-Control-Allow-Origin", "*")
		}
		return next(c)
	}
}

// handlePreflight answers OPTIONS on the token and revocation endpoints
// (Fetch standard, CORS-preflight). An origin no approved public client
// allows, or a method other than POST, gets 204 without any
// Access-Control-Allow-* header, which the browser takes as a refusal.
func (s *Server) handlePreflight(c echo.Context) error {
	h := c.Response().Header()
	h.Add("Vary", "Origin")
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	h.Set("Cache-Control", "no-store")
	origin := c.Request().Header.Get("Origin")
	methods := http.MethodPost
	if c.Path() == userinfoPath {
		methods = "GET, POST"
	}
	switch m := c.Request().Header.Get("Access-Control-Request-Method"); {
	case origin == "":
		return c.NoContent(http.StatusNoContent)
	case m == http.MethodPost:
	case m == http.MethodGet && c.Path() == userinfoPath:
	default:
		return c.NoContent(http.StatusNoContent)
	}
	ok, err := s.cors.known(c.Request().Context(), origin)
	if err != nil {
		return err
	}
	if ok {
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Methods", methods)
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, DPoP")
		h.Set("Access-Control-Max-Age", "600")
	}
	return c.NoContent(http.StatusNoContent)
}

// known reports whether some approved public client allows origin.
func (cs *corsState) known(ctx context.Context, origin string) (bool, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if now := cs.now(); cs.origins == nil || now.Sub(cs.built) >= corsOriginsTTL || now.Before(cs.built) {
		clients, err := cs.list(ctx)
		if err != nil {
			return false, err
		}
		set := map[string]bool{}
		for _, c := range clients {
			for _, o := range data.AllowedOrigins(c) {
				set[o] = true
			}
		}
		cs.origins, cs.built = set, now
	}
	return cs.origins[origin], nil
}

// allowOrigin lets the browser read the response of the token or
// revocation endpoint when the request's Origin is one the authenticated
// client allows. Called once the client has authenticated.
func (s *Server) allowOrigin(c echo.Context, client data.Client) {
	if s.cors == nil {
		return
	}
	origin := c.Request().Header.Get("Origin")
	if origin == "" {
		return
	}
	if p := c.Path(); p != tokenPath && p != revokePath && p != parPath && p != userinfoPath {
		return
	}
	if slices.Contains(data.AllowedOrigins(client), origin) {
		h := c.Response().Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Expose-Headers", "WWW-Authenticate, DPoP-Nonce")
	}
}
