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
//     replica). The access token is then bound to the proof's key
//     (cnf.jkt) and token_type is DPoP.
//   - The jti is spent in two steps, so that nothing an unauthenticated
//     caller sends is stored (a public client's ID is public): first in
//     this replica's bounded memory (localJTIs: a replay to the same
//     replica is refused before any store access) and checked against
//     the store with a read (NonceUsed: a proof spent on another replica
//     is refused before the grant is used); then durably in the store
//     (every replica) only once the client and the grant have passed,
//     before the tokens are sent (spendProof). A proof found spent at
//     that point (two requests with one proof racing on two replicas)
//     revokes the grant it was just used for: the credential and a proof
//     already used travel together, the mark of a stolen request. The memory
//     cache, when full (a flood), forgets its oldest entries; the store
//     still decides.
//   - A client with dpop_bound_access_tokens must send one.
//   - A public client's refresh tokens are bound to the key of the proof
//     its grant was made with (Family.JKT): a refresh needs a proof by the
//     same key. A confidential client's are not (its secret binds them).
//   - A family made without a proof stays unbound: a later proof binds
//     the access tokens it issues, not the family.

// tokenEndpointPath is where the token endpoint is mounted.
const tokenEndpointPath = "/v2/auth/oauth2/token"

// localJTIs is the capacity of a server's in-memory replay cache of token
// endpoint proofs (about 150 bytes an entry, so ~20 MiB at most): a
// replay to the same replica within it is refused without a store access.
const localJTIs = 1 << 17

// tokenProof checks the DPoP proof of a token request from client and
// returns it, or nil when there is none (and none is required). Its jti
// is spent in this replica's memory only; [Server.spendProof] spends it
// in the store once the grant has passed.
func (s *Server) tokenProof(c echo.Context, client data.Client) (*verify.Proof, error) {
	proofs := c.Request().Header.Values("DPoP")
	switch {
	case len(proofs) > 1:
		return nil, WithDescription(ErrInvalidDPoPProof, "send one DPoP header")
	case len(proofs) == 0 && client.DPoPBoundAccessTokens:
		return nil, WithDescription(ErrInvalidDPoPProof, "this client must send a DPoP proof (dpop_bound_access_tokens)")
	case len(proofs) == 0:
		return nil, nil
	}
	ctx := c.Request().Context()
	p, err := s.dpop.Verify(proofs[0], "POST", s.cfg.Issuer+tokenEndpointPath, "")
	if err == nil {
		// A filter: when full it forgets its oldest entry (the store
		// still decides), so only ErrExists comes back.
		if lerr := s.jtis.UseNonce(ctx, p.ReplayKey, p.Expires); errors.Is(lerr, data.ErrExists) {
			err = fmt.Errorf("%w: replayed (jti already used)", verify.ErrInvalidProof)
		}
	}
	if err == nil {
		// Spent on another replica (or evicted here): refused before
		// the grant is used. A read; nothing is written.
		switch used, rerr := s.store.NonceUsed(ctx, p.ReplayKey); {
		case rerr != nil:
			return nil, fmt.Errorf("token: check the DPoP proof's jti: %w", rerr)
		case used:
			err = fmt.Errorf("%w: replayed (jti already used)", verify.ErrInvalidProof)
		}
	}
	if errors.Is(err, verify.ErrInvalidProof) {
		s.metrics.dpopRefused.Inc()
		return nil, proofError(err)
	}
	if err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	return &p, nil
}

// proofError is the invalid_dpop_proof answer to err (which wraps
// verify.ErrInvalidProof).
func proofError(err error) *Error {
	return WithDescription(ErrInvalidDPoPProof, "%s", strings.TrimPrefix(err.Error(), verify.ErrInvalidProof.Error()+": "))
}

// spendProof records p's jti in the store (every replica), after the
// grant familyID was made or rotated with it and before its tokens are
// sent. A jti another replica (or an evicted local entry) already spent
// means the request was replayed: the grant is revoked and the answer is
// invalid_dpop_proof. p may be nil (no proof).
func (s *Server) spendProof(ctx context.Context, c echo.Context, p *verify.Proof, client data.Client, fam data.Family) error {
	if p == nil {
		return nil
	}
	err := p.Spend(ctx, s.store)
	if err == nil {
		return nil
	}
	if !errors.Is(err, verify.ErrInvalidProof) {
		return fmt.Errorf("token: %w", err)
	}
	s.metrics.dpopRefused.Inc()
	if derr := s.store.DeleteFamily(ctx, fam.ID); derr != nil && !errors.Is(derr, data.ErrNotFound) {
		return fmt.Errorf("token: revoke the grant of a replayed DPoP proof: %w", derr)
	}
	s.audit(ctx, c, "dpop_proof_replayed", client.ID, fam.UserID)
	return proofError(err)
}

// proofJKT is the thumbprint of p's key, "" for no proof.
func proofJKT(p *verify.Proof) string {
	if p == nil {
		return ""
	}
	return p.JKT
}

// refreshBinding is the key a new family's refresh tokens are bound to.
func refreshBinding(client data.Client, jkt string) string {
	if client.Type == data.Public {
		return jkt
	}
	return ""
}
