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
	scopes, e := reviewedScopes(client, req.Scope, true)
	if e != nil {
		return tokenResponse{}, e
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

// reviewedScopes returns the scopes a client asks for itself, without a
// user's consent to them (the client_credentials grant, the device
// authorization request): those of raw (the scope parameter), each among
// the client's reviewed scopes, or all of them when raw is empty (RFC 6749
// §3.3: the documented default). A legacy client has no reviewed scopes
// (unauthorized_client). userless is a token without a user
// (client_credentials): openid, which names a user (OpenID Connect), is
// never in it.
func reviewedScopes(client data.Client, raw string, userless bool) ([]string, *Error) {
	if client.Legacy {
		return nil, WithDescription(ErrUnauthorizedClient, "a legacy client has no reviewed scopes; migrate it to scopes first")
	}
	scopes := client.Scopes
	if userless {
		scopes = slices.DeleteFunc(slices.Clone(client.Scopes), func(sc string) bool { return sc == scope.OpenID })
	}
	if raw != "" {
		asked, err := scope.Parse(raw)
		if err != nil {
			return nil, WithDescription(ErrInvalidScope, "scope names an unknown scope")
		}
		if userless && slices.Contains(asked, scope.OpenID) {
			return nil, WithDescription(ErrInvalidScope, "openid needs a user; a client_credentials token has none")
		}
		if outside, ok := scope.Subset(asked, client.Scopes); !ok {
			return nil, WithDescription(ErrInvalidScope, "%s is not among the client's approved scopes", strings.Join(outside, " "))
		}
		scopes = asked
	}
	if len(scopes) == 0 {
		if userless {
			return nil, WithDescription(ErrInvalidScope, "the client has no approved scope a token without a user can carry")
		}
		return nil, WithDescription(ErrInvalidScope, "the client has no approved scope")
	}
	return scopes, nil
}
