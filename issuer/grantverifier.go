package issuer

import (
	"context"
	"fmt"

	"oauthd/keys/verify"
)

// GrantVerifier is a token verifier that also applies [Server.CheckGrant],
// for the guard of /v2/me: a token is good there only while the grant it
// was issued from stands, so a revoked grant's token is 401 there whatever
// its scopes. The guard (Config.MeAuth) exists before the Server does, so
// [GrantVerifier.Bind] gives it the Server once [New] has made it, before
// serving; until then Verify refuses every token.
type GrantVerifier struct {
	v   TokenVerifier
	srv *Server
}

// NewGrantVerifier wraps v, the verifier of signatures and claims.
func NewGrantVerifier(v TokenVerifier) *GrantVerifier { return &GrantVerifier{v: v} }

// Bind sets the Server whose grants decide. Call it before serving.
func (g *GrantVerifier) Bind(s *Server) { g.srv = s }

// Verify verifies token with the wrapped verifier, then its grant. Both
// kinds of failure wrap [verify.ErrInvalidToken].
func (g *GrantVerifier) Verify(ctx context.Context, token string) (*verify.Claims, error) {
	if g.srv == nil {
		return nil, fmt.Errorf("%w: no issuer to check the grant with", verify.ErrInvalidToken)
	}
	c, err := g.v.Verify(ctx, token)
	if err != nil {
		return nil, err
	}
	if err := g.srv.CheckGrant(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}
