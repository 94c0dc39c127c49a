package issuer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/data/scope"
	"oauthd/keys/verify"
)

// The refresh_token grant's rules, in one place (docs/DESIGN.md "What each
// decision reaches, and when"):
//
//   - What a presented refresh token is worth is decided here, by
//     [judgeRefresh], inside the store's transaction
//     ([data.Store.RotateRefreshToken] only provides the transaction).
//   - A token in the tagged form whose tag is not ours was never issued:
//     invalid_grant before any store access, nothing changes.
//   - The family's current token rotates it. The immediately previous one,
//     within Config.RefreshReuseGrace of the rotation that replaced it,
//     rotates it once more (a lost response); the token that was current
//     then dies with it, so there is still one live chain.
//   - Any other token the family issued (valid tag, or one of its stored
//     hashes) is a genuine replay: the family is revoked (RFC 9700
//     §4.14.2). An untagged token on a family whose current token is
//     tagged, and matching none of its hashes, is a forgery: nothing
//     changes. On a family not rotated since tags began (current token
//     untagged) an unknown untagged token still revokes, as before: there
//     is nothing to tell a replay from a forgery there.
//   - Narrowing: a scoped grant of a scoped client keeps only the scopes
//     the client still has (stored, so a scope later given back to the
//     client does not come back without a new consent); a grant left with
//     none is revoked. Unrestricted (legacy) grants keep the seed's rule.

// verdict is what [judgeRefresh] makes of a presented refresh token.
type verdict int

const (
	rotateCurrent verdict = iota // the current token: rotate
	rotateGrace                  // the previous token within the grace, unused: rotate once more
	genuineReplay                // a token the family issued earlier: revoke the family
	forged                       // never issued for this family: refuse, change nothing
)

// Errors of the refresh decision that are not OAuth errors yet: the store
// returns them as update returned them.
var (
	errForged = errors.New("refresh token never issued for its family")
	// errNoScopeLeft wraps data.ErrTokenReused so that the store deletes
	// the family ([data.Store.RotateRefreshToken]).
	errNoScopeLeft = fmt.Errorf("the client has none of the grant's scopes left: %w", data.ErrTokenReused)
)

// judgeRefresh decides what a token with hash presented and tag check tag
// (Untagged or TagValid; a TagInvalid token never reaches the store) is
// worth against its family f at now. It is pure, and compares every stored
// hash in constant time, all of them every time.
func judgeRefresh(f *data.Family, presented []byte, tag data.TagCheck, now time.Time, grace time.Duration) verdict {
	current := data.Equal(presented, f.TokenHash)
	prev := data.Equal(presented, f.PrevHash)
	legacy := data.Equal(presented, f.LegacyHash)
	switch {
	case current:
		return rotateCurrent
	case prev && grace > 0 && now.Before(f.RotatedAt.Add(grace)):
		return rotateGrace
	case prev, legacy, tag == data.TagValid:
		return genuineReplay
	case !f.Tagged:
		// The family's current token is of the untagged form of earlier
		// releases: an unknown untagged token may be one of its earlier
		// tokens, and revokes as it always did.
		return genuineReplay
	}
	return forged
}

// keptScopes returns the grant's scopes that the client still has, in the
// grant's order: narrowing, not widening (RFC 6749 §6: never more than the
// original authorization). When the client has them all (the usual case)
// it returns granted itself, without allocating.
func keptScopes(granted, client []string) []string {
	all := true
	for _, g := range granted {
		if !slices.Contains(client, g) {
			all = false
			break
		}
	}
	if all {
		return granted
	}
	kept := make([]string, 0, len(granted))
	for _, g := range granted {
		if slices.Contains(client, g) {
			kept = append(kept, g)
		}
	}
	return kept
}

// refresh runs the refresh_token grant (RFC 6749 §6) with rotation (RFC
// 9700 §4.14.2).
func (s *Server) refresh(ctx context.Context, c echo.Context, client data.Client, req *tokenRequest, proof *verify.Proof) (tokenResponse, error) {
	jkt := proofJKT(proof)
	if req.RefreshToken == "" {
		return tokenResponse{}, tokBadRequest("refresh_token is required")
	}
	familyID, ok := data.ParseRefreshToken(req.RefreshToken)
	if !ok {
		return tokenResponse{}, WithDescription(ErrInvalidGrant, "the refresh token is invalid")
	}
	tag := s.tagger.Check(req.RefreshToken)
	if tag == data.TagInvalid {
		s.metrics.refreshForged.Inc()
		return tokenResponse{}, errUnknownRefresh()
	}
	var narrowed []string
	if req.Scope != "" {
		var err error
		narrowed, err = scope.Parse(req.Scope)
		if err != nil {
			return tokenResponse{}, WithDescription(ErrInvalidScope, "scope names an unknown scope")
		}
	}
	if _, e := s.requestedResources(req.Resources); e != nil {
		return tokenResponse{}, e
	}
	presented := data.Hash(req.RefreshToken)
	now := s.now()
	var (
		refreshToken string
		access       *pendingToken
		v            verdict
		lostScopes   bool
	)
	// The update below keeps the rotation promise (data.WithPresented):
	// on a family whose current token is the presented one, it reads
	// neither PrevHash, RotatedAt nor Generation (but to add one), and
	// ExpiresAt only to refuse; TestRefreshKeepsTheRotationPromise.
	fam, err := s.store.RotateRefreshToken(data.WithPresented(ctx, presented), familyID, func(f data.Family) (data.Family, error) {
		lostScopes = false
		// A forgery first: it learns nothing about the family (not even
		// its client or expiry) and changes nothing.
		if v = judgeRefresh(&f, presented, tag, now, s.grace); v == forged {
			return data.Family{}, errForged
		}
		if f.ClientID != client.ID {
			return data.Family{}, WithDescription(ErrInvalidGrant, "the refresh token was issued to another client")
		}
		if !now.Before(f.ExpiresAt) || !now.Before(f.AbsoluteExp) {
			return data.Family{}, WithDescription(ErrInvalidGrant, "the refresh token has expired")
		}
		if v == genuineReplay {
			return data.Family{}, fmt.Errorf("refresh family %s: %w", f.ID, data.ErrTokenReused)
		}
		if f.JKT != "" && f.JKT != jkt {
			// RFC 9449 §5: a bound refresh token is worth nothing
			// without a proof by its key; nothing changes.
			return data.Family{}, WithDescription(ErrInvalidGrant, "the refresh token is bound to a DPoP key: send a DPoP proof signed with that key")
		}
		if !f.Unrestricted && !client.Legacy {
			kept := keptScopes(f.Scopes, client.Scopes)
			if len(kept) == 0 {
				return data.Family{}, errNoScopeLeft
			}
			lostScopes = len(kept) < len(f.Scopes)
			f.Scopes = kept
		}
		if len(narrowed) > 0 && !f.Unrestricted {
			if _, ok := scope.Subset(narrowed, f.Scopes); !ok {
				return data.Family{}, WithDescription(ErrInvalidScope, "scope must be a subset of the scopes this grant still has")
			}
		}
		// RFC 8707 §2.2: the grant keeps its resources; a token may be
		// for fewer.
		resources, e := s.tokenResources(req.Resources, f.Resources)
		if e != nil {
			return data.Family{}, e
		}
		refreshToken = s.tagger.NewToken(f.ID)
		if len(narrowed) > 0 {
			// A narrowed token: the family keeps its scopes (RFC 6749 §6).
			access = s.startAccessToken(now, f.ID, f.UserID, f.ClientID, narrowed, false, jkt, resources)
		} else {
			access = s.startAccessToken(now, f.ID, f.UserID, f.ClientID, f.Scopes, f.Unrestricted, jkt, resources)
		}
		if v == rotateGrace {
			// The previous token's one extra use: the token that was
			// current dies (it is neither current nor previous now), and
			// the previous token cannot be used again.
			f.PrevHash = nil
		} else {
			if !f.Tagged {
				// The family's last untagged token: a replay of it stays
				// recognisable however many rotations follow.
				f.LegacyHash = f.TokenHash
			}
			f.PrevHash = f.TokenHash
		}
		f.Tagged = true
		f.TokenHash = data.Hash(refreshToken)
		f.Generation++
		f.RotatedAt = now
		f.ExpiresAt = minTime(now.Add(s.cfg.RefreshIdle), f.AbsoluteExp)
		return f, nil
	})
	var oe *Error
	switch {
	case err == nil:
	case errors.As(err, &oe):
		return tokenResponse{}, oe
	case errors.Is(err, data.ErrNotFound):
		return tokenResponse{}, errUnknownRefresh()
	case errors.Is(err, errForged):
		s.metrics.refreshForged.Inc()
		return tokenResponse{}, errUnknownRefresh()
	case errors.Is(err, errNoScopeLeft):
		s.metrics.refreshNarrowed.WithLabelValues("revoked").Inc()
		s.audit(ctx, c, "grant_revoked_no_scope_left", fam.ClientID, fam.UserID)
		return tokenResponse{}, WithDescription(ErrInvalidGrant, "the client no longer has any of the scopes of this grant; the user must authorize it again")
	case errors.Is(err, data.ErrTokenReused):
		s.metrics.refreshReuse.Inc()
		s.audit(ctx, c, "refresh_token_reuse", fam.ClientID, fam.UserID)
		return tokenResponse{}, WithDescription(ErrInvalidGrant, "the refresh token was already used; its grant is revoked")
	default:
		return tokenResponse{}, fmt.Errorf("rotate refresh token: %w", err)
	}
	if v == rotateGrace {
		s.metrics.refreshGrace.Inc()
		s.audit(ctx, c, "refresh_token_grace", fam.ClientID, fam.UserID)
	}
	if lostScopes {
		s.metrics.refreshNarrowed.WithLabelValues("narrowed").Inc()
	}
	if err := s.spendProof(ctx, c, proof, client, fam); err != nil {
		return tokenResponse{}, err
	}
	scopes, unrestricted := fam.Scopes, fam.Unrestricted
	if len(narrowed) > 0 {
		// A narrowed token: the family keeps its scopes (RFC 6749 §6).
		scopes, unrestricted = narrowed, false
	}
	tok, err := access.wait()
	if err != nil {
		return tokenResponse{}, err
	}
	resp := s.newTokenResponse(tok, refreshToken, scopes, unrestricted, jkt)
	if slices.Contains(scopes, scope.OpenID) {
		// OpenID Connect Core §12.2: a new ID token with the same sub and
		// auth_time, and no nonce.
		authTime := fam.AuthTime
		if authTime.IsZero() {
			authTime = fam.CreatedAt
		}
		resp.IDToken, err = s.mintIDToken(ctx, idTokenParams{userID: fam.UserID, clientID: fam.ClientID, scopes: scopes,
			authTime: authTime, accessToken: tok, now: now})
		if err != nil {
			return tokenResponse{}, err
		}
	}
	return resp, nil
}

// errUnknownRefresh is the answer to a refresh token that is unknown,
// revoked or never issued: one description for all, so that the answer
// does not tell whether a family ID is live.
func errUnknownRefresh() *Error {
	return WithDescription(ErrInvalidGrant, "the refresh token is invalid, expired or revoked")
}
