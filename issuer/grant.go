package issuer

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"oauthd/data"
	"oauthd/keys/verify"
)

// grantLive reports whether the grant an access token was issued from
// still stands, for the server's own checks (/v2/me, introspection): its
// client is approved, and the family the token names (grant_id) still
// exists, for the same client and user. Revoking a family (reuse, code
// replay, RFC 7009 revocation, the client's rejection) therefore reaches
// its access tokens here at once. A token issued before grant_id existed
// is checked only against its client (it expires within 30 minutes).
// Resource servers that verify offline do not see any of this.
//
// It costs one family read; the client read is the cache's in serve.
func (s *Server) grantLive(ctx context.Context, claims *verify.Claims) (bool, error) {
	client, err := s.store.GetClient(ctx, claims.ClientID)
	switch {
	case errors.Is(err, data.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("check grant: %w", err)
	case client.Status != data.StatusApproved:
		return false, nil
	case claims.GrantID == "":
		return true, nil
	}
	fam, err := s.store.GetFamily(ctx, claims.GrantID)
	switch {
	case errors.Is(err, data.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("check grant: %w", err)
	}
	return fam.ClientID == claims.ClientID && strconv.FormatInt(fam.UserID, 10) == claims.Subject, nil
}

// CheckGrant is grantLive for the guard of /v2/me ([GrantVerifier] wraps the
// guard's verifier with it): a token whose grant no longer stands fails
// like an invalid token, so /v2/me answers 401 invalid_token before any
// scope is judged (RFC 6750 §3.1), not 403 insufficient_scope. A store
// error is not the token's fault: CheckGrant lets it pass, and handleMe,
// which checks again, answers the error (503 during a store outage).
func (s *Server) CheckGrant(ctx context.Context, claims *verify.Claims) error {
	live, err := s.grantLive(ctx, claims)
	if err != nil || live {
		return nil
	}
	s.metrics.grantRefused.Inc()
	return fmt.Errorf("%w: the token's grant was revoked", verify.ErrInvalidToken)
}
