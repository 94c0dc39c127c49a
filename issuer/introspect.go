package issuer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/data/scope"
	"oauthd/keys/verify"
)

// introspection is an RFC 7662 §2.2 response.
type introspection struct {
	Active       bool   `json:"active"`
	Scope        string `json:"scope,omitempty"`
	ClientID     string `json:"client_id,omitempty"`
	Subject      string `json:"sub,omitempty"`
	ExpiresAt    int64  `json:"exp,omitempty"`
	IssuedAt     int64  `json:"iat,omitempty"`
	Issuer       string `json:"iss,omitempty"`
	Audience     any    `json:"aud,omitempty"`
	ID           string `json:"jti,omitempty"`
	TokenType    string `json:"token_type,omitempty"`
	Unrestricted bool   `json:"unrestricted,omitempty"`
	Cnf          *cnf   `json:"cnf,omitempty"` // RFC 9449 §6.2
}

// cnf is the confirmation of a DPoP-bound token (RFC 9449 §6).
type cnf struct {
	JKT string `json:"jkt"`
}

// handleIntrospect is POST /v2/auth/oauth2/introspect (RFC 7662). The
// client authenticates as at the token endpoint, with a secret (a public
// client is refused), and may introspect only tokens issued to it: anything else (another client's, invalid, expired,
// revoked, unknown) is {"active":false}. An access token is inactive as
// soon as its grant is revoked or its client no longer approved
// (grantLive).
func (s *Server) handleIntrospect(c echo.Context) error {
	resp, err := s.introspect(c)
	if err != nil {
		return writeOAuthError(c, toOAuthError(c, s.log, s.cfg.Outage, err))
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return fmt.Errorf("introspect: %w", err)
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	return c.JSONBlob(http.StatusOK, b)
}

func (s *Server) introspect(c echo.Context) (introspection, error) {
	ctx := c.Request().Context()
	req, perr := parseTokenRequest(c.Request())
	if perr != nil {
		return introspection{}, perr
	}
	client, err := s.authenticateClient(ctx, c, &req)
	if err != nil {
		return introspection{}, err
	}
	if client.Type == data.Public {
		// RFC 7662 §2.1: introspection needs client authentication, and a
		// client_id alone is none (the metadata lists no "none"). Open to
		// anyone who knows a public client's ID, it would let a thief of a
		// refresh token learn, without tripping reuse detection, whether
		// the token is still current.
		return introspection{}, WithDescription(ErrInvalidClient, "introspection needs client authentication; a public client has no secret")
	}
	if req.Token == "" {
		return introspection{}, tokBadRequest("token is required")
	}
	if familyID, ok := data.ParseRefreshToken(req.Token); ok {
		return s.introspectRefresh(ctx, client, familyID, req.Token)
	}
	return s.introspectAccess(ctx, client, req.Token)
}

// introspectAccess introspects an access token for client: active when
// it verifies, was issued to client and its grant is live.
func (s *Server) introspectAccess(ctx context.Context, client data.Client, token string) (introspection, error) {
	claims, err := s.cfg.Verifier.Verify(ctx, token)
	if err != nil || claims.ClientID != client.ID {
		return introspection{}, nil
	}
	switch live, err := s.grantLive(ctx, claims); {
	case err != nil:
		return introspection{}, fmt.Errorf("introspect: %w", err)
	case !live:
		s.metrics.grantRefused.Inc()
		return introspection{}, nil
	}
	return accessIntrospection(claims), nil
}

// accessIntrospection is the active answer for a verified access token.
func accessIntrospection(claims *verify.Claims) introspection {
	r := introspection{
		Active:       true,
		ClientID:     claims.ClientID,
		Subject:      claims.Subject,
		ExpiresAt:    claims.ExpiresAt.Unix(),
		IssuedAt:     claims.IssuedAt.Unix(),
		Issuer:       claims.Issuer,
		ID:           claims.ID,
		TokenType:    tokenTypeOf(claims.JKT),
		Unrestricted: claims.Unrestricted,
		Cnf:          cnfOf(claims.JKT),
	}
	if !claims.Unrestricted {
		r.Scope = scope.Join(claims.Scopes)
	}
	switch len(claims.Audience) {
	case 0:
	case 1:
		r.Audience = claims.Audience[0]
	default:
		r.Audience = claims.Audience
	}
	return r
}

// introspectRefresh introspects the refresh token of family familyID
// for client: active when the family is client's, unexpired, token is
// the one the token endpoint would rotate now, and the grant keeps a
// scope the client still has.
func (s *Server) introspectRefresh(ctx context.Context, client data.Client, familyID, token string) (introspection, error) {
	fam, err := s.store.GetFamily(ctx, familyID)
	switch {
	case errors.Is(err, data.ErrNotFound):
		return introspection{}, nil
	case err != nil:
		return introspection{}, fmt.Errorf("introspect: %w", err)
	}
	now := s.now()
	if fam.ClientID != client.ID || fam.Expired(now) || !s.refreshesNow(&fam, token, now) {
		return introspection{}, nil
	}
	scopes := fam.Scopes
	if !fam.Unrestricted && !client.Legacy {
		// As the next refresh will see it: narrowed to the client's
		// scopes, and revoked when none is left (refresh).
		if scopes = keptScopes(fam.Scopes, client.Scopes); len(scopes) == 0 {
			return introspection{}, nil
		}
	}
	r := introspection{
		Active:       true,
		ClientID:     fam.ClientID,
		Subject:      strconv.FormatInt(fam.UserID, 10),
		ExpiresAt:    fam.ExpiresAt.Unix(),
		IssuedAt:     fam.RotatedAt.Unix(),
		TokenType:    "refresh_token",
		Unrestricted: fam.Unrestricted,
	}
	if !fam.Unrestricted {
		r.Scope = scope.Join(scopes)
	}
	return r, nil
}

func cnfOf(jkt string) *cnf {
	if jkt == "" {
		return nil
	}
	return &cnf{JKT: jkt}
}

// tokenTypeOf is the token_type of an access token: DPoP when bound.
func tokenTypeOf(jkt string) string {
	if jkt != "" {
		return "DPoP"
	}
	return "Bearer"
}

// refreshesNow reports whether token is the refresh token of f that the
// token endpoint would rotate as its current one: the stored current
// token, or one issued after the stored state (a restore: judgeRefresh's
// rotateAhead). The previous token within the reuse grace is not active:
// its one extra use is for a client that lost a response.
func (s *Server) refreshesNow(f *data.Family, token string, now time.Time) bool {
	v := s.judgeToken(f, token, now)
	return v == rotateCurrent || v == rotateAhead
}
