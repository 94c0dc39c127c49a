package issuer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/keys/verify"
)

// The token endpoint's DPoP rules (RFC 9449 §5), in one place:
//   - A request may carry one DPoP header: its proof must be valid for
//     POST to the token endpoint (verify.DPoP: typ, ES256 or EdDSA, htm,
//     htu, iat within Config.DPoPWindow, jti never seen before by any
//     replica: the store records it). The access token is then bound to
//     the proof's key (cnf.jkt) and token_type is DPoP.
//   - A client with dpop_bound_access_tokens must send one.
//   - A public client's refresh tokens are bound to the key of the proof
//     its grant was made with (Family.JKT): a refresh needs a proof by the
//     same key. A confidential client's are not (its secret binds them).
//   - A family made without a proof stays unbound: a later proof binds
//     the access tokens it issues, not the family.

// tokenEndpointPath is where the token endpoint is mounted.
const tokenEndpointPath = "/v2/auth/oauth2/token"

// tokenProof checks the DPoP proof of a token request from client and
// returns its key's thumbprint, or "" when there is none (and none is
// required).
func (s *Server) tokenProof(ctx context.Context, c echo.Context, client data.Client) (string, error) {
	proofs := c.Request().Header.Values("DPoP")
	switch {
	case len(proofs) > 1:
		return "", WithDescription(ErrInvalidDPoPProof, "send one DPoP header")
	case len(proofs) == 0 && client.DPoPBoundAccessTokens:
		return "", WithDescription(ErrInvalidDPoPProof, "this client must send a DPoP proof (dpop_bound_access_tokens)")
	case len(proofs) == 0:
		return "", nil
	}
	jkt, err := s.dpop.Check(ctx, proofs[0], "POST", s.cfg.Issuer+tokenEndpointPath, "")
	if errors.Is(err, verify.ErrInvalidProof) {
		s.metrics.dpopRefused.Inc()
		return "", WithDescription(ErrInvalidDPoPProof, "%s", strings.TrimPrefix(err.Error(), verify.ErrInvalidProof.Error()+": "))
	}
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return jkt, nil
}

// refreshBinding is the key a new family's refresh tokens are bound to.
func refreshBinding(client data.Client, jkt string) string {
	if client.Type == data.Public {
		return jkt
	}
	return ""
}
