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
//   - A token carrying a generation (data.NewRefreshToken) higher than
//     the family's stored one, with a valid tag, was issued by this server
//     after the state the store holds: the store was restored from a
//     backup (or lost a committed write). It rotates the family once,
//     forward to that generation plus one; docs/SECURITY.md "Refresh
//     tokens after a restore" gives the rule and its argument.
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
	rotateAhead                  // issued after the stored state (a restore): rotate once, forward
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

// presentedRefresh is what a presented refresh token says before any store
// access: its family, its hash, its tag check (Untagged or TagValid; a
// TagInvalid token never reaches the store) and, for the form with one,
// its generation.
type presentedRefresh struct {
	familyID string
	hash     []byte
	tag      data.TagCheck
	gen      uint64 // valid when hasGen
	hasGen   bool   // the token carries a generation and a valid tag
}

// readRefreshToken parses token and checks its tag: ok false when it is
// not a refresh token of ours, tag TagInvalid when its tag is not ours.
func (s *Server) readRefreshToken(token string) (p presentedRefresh, ok bool) {
	p.familyID, ok = data.ParseRefreshToken(token)
	if !ok {
		return p, false
	}
	p.tag = s.tagger.Check(token)
	if p.tag == data.TagValid {
		p.gen, p.hasGen = data.RefreshGeneration(token)
	}
	p.hash = data.Hash(token)
	return p, true
}

// judgeRefresh decides what the presented token p is worth against its
// family f at now. It is pure, and compares every stored hash in constant
// time, all of them every time.
func judgeRefresh(f *data.Family, p presentedRefresh, now time.Time, grace time.Duration) verdict {
	current := data.Equal(p.hash, f.TokenHash)
	prev := data.Equal(p.hash, f.PrevHash)
	legacy := data.Equal(p.hash, f.LegacyHash)
	switch {
	case current:
		return rotateCurrent
	case prev && grace > 0 && now.Before(f.RotatedAt.Add(grace)):
		return rotateGrace
	case !prev && !legacy && p.tag == data.TagValid && p.hasGen && p.gen > f.Generation:
		// Every token the server issued for f has a generation no
		// higher than the one stored with f, unless the store lost the
		// rotation that issued it (a restore): docs/SECURITY.md.
		return rotateAhead
	case prev, legacy, p.tag == data.TagValid:
		return genuineReplay
	case !f.Tagged:
		// The family's current token is of the untagged form of earlier
		// releases: an unknown untagged token may be one of its earlier
		// tokens, and revokes as it always did.
		return genuineReplay
	}
	return forged
}

// judgeToken is judgeRefresh of the refresh token text against f, for the
// endpoints that only ask what a token is worth (revocation,
// introspection): a token whose tag is not ours is forged.
func (s *Server) judgeToken(f *data.Family, token string, now time.Time) verdict {
	p, _ := s.readRefreshToken(token)
	if p.tag == data.TagInvalid {
		return forged
	}
	return judgeRefresh(f, p, now, s.grace)
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
// 9700 §4.14.2): the request is read (readRefresh), the family rotated in
// the store (rotation.update decides), the store's answer turned into the
// grant's (refreshRefused), and the response built (finishRefresh).
func (s *Server) refresh(ctx context.Context, c echo.Context, client data.Client, req *tokenRequest, proof *verify.Proof) (tokenResponse, error) {
	r, err := s.readRefresh(client, req, proof)
	if err != nil {
		return tokenResponse{}, err
	}
	rctx := ctx
	if r.p.hasGen {
		// The update keeps the rotation promise (data.WithPresented): on
		// a family whose current token is the presented one, it reads
		// neither PrevHash, RotatedAt nor Generation (but to add one),
		// and ExpiresAt only to refuse; TestRefreshKeepsTheRotationPromise.
		// Only for a token with a generation: the successor of one
		// without takes the family's generation plus one, which must not
		// come from a stale guess (data/postgres), or the new token would
		// carry a generation behind the stored one.
		rctx = data.WithPresented(ctx, r.p.hash)
	}
	fam, err := s.store.RotateRefreshToken(rctx, r.p.familyID, func(f data.Family) (data.Family, error) {
		return r.update(ctx, f)
	})
	if err != nil {
		return tokenResponse{}, s.refreshRefused(ctx, c, err, fam)
	}
	return s.finishRefresh(ctx, c, r, fam)
}

// refreshRotation is one refresh request: what was read from it, and what
// the store's update decided (the last call's, as the store may ask again).
type refreshRotation struct {
	s         *Server
	client    data.Client
	p         presentedRefresh
	narrowed  []string      // the scope parameter, or nil
	resources []string      // the resource parameters (RFC 8707), checked, or nil
	proof     *verify.Proof // the DPoP proof, or nil
	jkt       string        // its key's thumbprint, or ""
	now       time.Time

	refreshToken string
	access       *pendingToken
	v            verdict
	lostScopes   bool
}

// readRefresh reads and checks the request before any store access (the
// table of grants has checked that refresh_token is present).
func (s *Server) readRefresh(client data.Client, req *tokenRequest, proof *verify.Proof) (*refreshRotation, error) {
	p, ok := s.readRefreshToken(req.RefreshToken)
	if !ok {
		return nil, WithDescription(ErrInvalidGrant, "the refresh token is invalid")
	}
	if p.tag == data.TagInvalid {
		s.metrics.refreshForged.Inc()
		return nil, errUnknownRefresh()
	}
	var narrowed []string
	if req.Scope != "" {
		var err error
		narrowed, err = scope.Parse(req.Scope)
		if err != nil {
			return nil, WithDescription(ErrInvalidScope, "scope names an unknown scope")
		}
	}
	resources, e := s.requestedResources(req.Resources)
	if e != nil {
		return nil, e
	}
	return &refreshRotation{s: s, client: client, p: p, narrowed: narrowed, resources: resources, proof: proof, jkt: proofJKT(proof), now: s.now()}, nil
}

// update is the refresh grant's [data.Store.RotateRefreshToken] update:
// it decides what the presented token is worth against f and returns f's
// successor, with a new token and a started access token.
func (r *refreshRotation) update(ctx context.Context, f data.Family) (data.Family, error) {
	s, now := r.s, r.now
	r.lostScopes = false
	// A forgery first: it learns nothing about the family (not even its
	// client or expiry) and changes nothing.
	if r.v = judgeRefresh(&f, r.p, now, s.grace); r.v == forged {
		return data.Family{}, errForged
	}
	if f.ClientID != r.client.ID {
		return data.Family{}, WithDescription(ErrInvalidGrant, "the refresh token was issued to another client")
	}
	if f.Expired(now) {
		return data.Family{}, WithDescription(ErrInvalidGrant, "the refresh token has expired")
	}
	if r.v == genuineReplay {
		return data.Family{}, fmt.Errorf("refresh family %s: %w", f.ID, data.ErrTokenReused)
	}
	if f.JKT != "" && f.JKT != r.jkt {
		// RFC 9449 §5: a bound refresh token is worth nothing without a
		// proof by its key; nothing changes.
		return data.Family{}, WithDescription(ErrInvalidGrant, "the refresh token is bound to a DPoP key: send a DPoP proof signed with that key")
	}
	if !f.Unrestricted && !r.client.Legacy {
		kept := keptScopes(f.Scopes, r.client.Scopes)
		if len(kept) == 0 {
			return data.Family{}, errNoScopeLeft
		}
		r.lostScopes = len(kept) < len(f.Scopes)
		f.Scopes = kept
	}
	if len(r.narrowed) > 0 && !f.Unrestricted {
		if _, ok := scope.Subset(r.narrowed, f.Scopes); !ok {
			return data.Family{}, WithDescription(ErrInvalidScope, "scope must be a subset of the scopes this grant still has")
		}
	}
	// RFC 8707 §2.2: the grant keeps its resources; a token may be for
	// fewer.
	resources, e := tokenResources(r.resources, f.Resources)
	if e != nil {
		return data.Family{}, e
	}
	f = r.successor(f)
	if len(r.narrowed) > 0 {
		// A narrowed token: the family keeps its scopes (RFC 6749 §6).
		r.access = s.startAccessToken(ctx, now, f.ID, f.UserID, f.ClientID, r.narrowed, false, r.jkt, resources)
	} else {
		r.access = s.startAccessToken(ctx, now, f.ID, f.UserID, f.ClientID, f.Scopes, f.Unrestricted, r.jkt, resources)
	}
	return f, nil
}

// successor returns f rotated by the verdict: a new current token (kept in
// r.refreshToken) of the next generation, and the hashes that keep a
// replay recognisable.
func (r *refreshRotation) successor(f data.Family) data.Family {
	var next uint64 // the new token's generation
	switch r.v {
	case rotateCurrent:
		// The rotation promise: the stored family's generation plus one,
		// which the current token carries when it carries one (the
		// family's own may be a stale guess here; data.WithPresented).
		f.Generation++
		next = f.Generation
		if r.p.hasGen {
			next = r.p.gen + 1
		}
	case rotateGrace:
		// The previous token's one extra use: the token that was current
		// dies (it is neither current nor previous now), and the previous
		// token cannot be used again.
		f.PrevHash = nil
		f.Generation++
		next = f.Generation
	case rotateAhead:
		// Forward past the presented token: every token issued before it,
		// and the presented one once its grace is over, is a replay.
		f.Generation = r.p.gen + 1
		next = f.Generation
	}
	if r.v != rotateGrace {
		if !f.Tagged {
			// The family's last untagged token: a replay of it stays
			// recognisable however many rotations follow.
			f.LegacyHash = f.TokenHash
		}
		// The presented token: within the grace it rotates once more (a
		// lost response).
		f.PrevHash = r.p.hash
	}
	r.refreshToken = r.s.tagger.NewToken(f.ID, next)
	f.Tagged = true
	f.TokenHash = data.Hash(r.refreshToken)
	f.RotatedAt = r.now
	f.ExpiresAt = minTime(r.now.Add(r.s.cfg.RefreshIdle), f.AbsoluteExp)
	return f
}

// refreshRefused turns the store's refusal of a rotation into the grant's
// answer, counting and auditing what deserves it; fam is what the store
// returned with the error (the revoked family, for a replay).
func (s *Server) refreshRefused(ctx context.Context, c echo.Context, err error, fam data.Family) error {
	var oe *Error
	switch {
	case errors.As(err, &oe):
		return oe
	case errors.Is(err, data.ErrNotFound):
		return errUnknownRefresh()
	case errors.Is(err, errForged):
		s.metrics.refreshForged.Inc()
		return errUnknownRefresh()
	case errors.Is(err, errNoScopeLeft):
		s.metrics.refreshNarrowed.WithLabelValues("revoked").Inc()
		s.audit(ctx, c, "grant_revoked_no_scope_left", fam.ClientID, fam.UserID)
		return WithDescription(ErrInvalidGrant, "the client no longer has any of the scopes of this grant; the user must authorize it again")
	case errors.Is(err, data.ErrTokenReused):
		s.metrics.refreshReuse.Inc()
		s.audit(ctx, c, "refresh_token_reuse", fam.ClientID, fam.UserID)
		return WithDescription(ErrInvalidGrant, "the refresh token was already used; its grant is revoked")
	}
	return fmt.Errorf("rotate refresh token: %w", err)
}

// finishRefresh answers a rotation the store committed: it counts and
// audits the rotation's kind, spends the DPoP proof, and waits for the
// access token (and signs an ID token for openid).
func (s *Server) finishRefresh(ctx context.Context, c echo.Context, r *refreshRotation, fam data.Family) (tokenResponse, error) {
	switch r.v {
	case rotateGrace:
		s.metrics.refreshGrace.Inc()
		s.audit(ctx, c, "refresh_token_grace", fam.ClientID, fam.UserID)
	case rotateAhead:
		s.metrics.refreshAhead.Inc()
		s.audit(ctx, c, "refresh_token_after_restore", fam.ClientID, fam.UserID)
	}
	if r.lostScopes {
		s.metrics.refreshNarrowed.WithLabelValues("narrowed").Inc()
	}
	if err := s.spendProof(ctx, c, r.proof, r.client, fam); err != nil {
		return tokenResponse{}, err
	}
	scopes, unrestricted := fam.Scopes, fam.Unrestricted
	if len(r.narrowed) > 0 {
		// A narrowed token: the family keeps its scopes (RFC 6749 §6).
		scopes, unrestricted = r.narrowed, false
	}
	tok, err := r.access.wait()
	if err != nil {
		return tokenResponse{}, err
	}
	resp := s.newTokenResponse(tok, r.refreshToken, scopes, unrestricted, r.jkt)
	if slices.Contains(scopes, scope.OpenID) {
		// OpenID Connect Core §12.2: a new ID token with the same sub and
		// auth_time, and no nonce.
		authTime := fam.AuthTime
		if authTime.IsZero() {
			authTime = fam.CreatedAt
		}
		resp.IDToken, err = s.mintIDToken(ctx, idTokenParams{userID: fam.UserID, clientID: fam.ClientID, scopes: scopes,
			authTime: authTime, accessToken: tok, now: r.now})
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
