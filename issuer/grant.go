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
