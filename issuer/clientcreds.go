package issuer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/data/scope"
	"oauthd/keys/verify"
)

// clientCredentials runs the client_credentials grant (RFC 6749 §4.4):
// a confidential client (authenticateClient has checked its secret or its
// key) gets an access token for itself. The scopes are those asked for,
// each within the client's reviewed scopes, or all of them when none is
// asked for (RFC 6749 §3.3: the documented default). No refresh token
// (§4.4.3): the client asks again. The token's sub is the client ID (RFC
// 9068 §2.2), it names no user and no grant (grant_id): nothing is stored,
// and the client's rejection or the revocation of its secret stops new
// tokens at once (authenticateClient reads the client on every request).
func (s *Server) clientCredentials(ctx context.Context, c echo.Context, client data.Client, req *tokenRequest, proof *verify.Proof) (tokenResponse, error) {
	if client.Type != data.Confidential {
		// data.ValidateClient keeps client_credentials from a public
		// client; a second line of defence.
		return tokenResponse{}, WithDescription(ErrUnauthorizedClient, "client_credentials is for confidential clients only")
	}
	if client.Legacy {
		return tokenResponse{}, WithDescription(ErrUnauthorizedClient, "a legacy client has no reviewed scopes; migrate it to scopes first")
	}
	// openid names a user (OpenID Connect): never in a token without one.
	scopes := slices.DeleteFunc(slices.Clone(client.Scopes), func(sc string) bool { return sc == scope.OpenID })
	if req.Scope != "" {
		asked, err := scope.Parse(req.Scope)
		if err != nil {
			return tokenResponse{}, WithDescription(ErrInvalidScope, "scope names an unknown scope")
		}
		if slices.Contains(asked, scope.OpenID) {
			return tokenResponse{}, WithDescription(ErrInvalidScope, "openid needs a user; a client_credentials token has none")
		}
		if outside, ok := scope.Subset(asked, client.Scopes); !ok {
			return tokenResponse{}, WithDescription(ErrInvalidScope, "%s is not among the client's approved scopes", strings.Join(outside, " "))
		}
		scopes = asked
	}
	if len(scopes) == 0 {
		return tokenResponse{}, WithDescription(ErrInvalidScope, "the client has no approved scope a token without a user can carry")
	}
	jkt := proofJKT(proof) // tokenProof required one of a DPoP-bound client
	if proof != nil {
		// No grant to revoke: a replayed proof is refused before a token.
		if err := proof.Spend(ctx, s.store); err != nil {
			if errors.Is(err, verify.ErrInvalidProof) {
				s.metrics.dpopRefused.Inc()
				return tokenResponse{}, proofError(err)
			}
			return tokenResponse{}, fmt.Errorf("token: %w", err)
		}
	}
	now := s.now()
	tok, err := s.startMachineToken(ctx, now, client.ID, scopes, jkt).wait()
	if err != nil {
		return tokenResponse{}, err
	}
	s.audit(ctx, c, "client_credentials", client.ID, 0)
	return s.newTokenResponse(tok, "", scopes, false, jkt), nil
}
