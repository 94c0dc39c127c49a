package issuer

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"time"

	"oauthd/data"
	"oauthd/data/scope"
	"oauthd/issuer/throttle"
)

// What a signed-in user can make the store keep through authorizations.
// Every approval (the consent page's Allow, or a prompt=none approval)
// stores at most one authorization code, one OpenID Connect nonce and one
// consent grant (an upsert of the user's one grant to the client), so
// bounding approvals bounds them all. The budgets are per user (whatever
// session or address they come from) and per (user, client), never per
// client or address alone: what one user does cannot refuse anyone else,
// and one app of the user's (say, a page looping on prompt=none) uses at
// most its own pair's budget, half the user's, so it cannot refuse
// the user's other apps. Past a budget the answer is the redirect
// temporarily_unavailable (RFC 6749 §4.1.2.1), and nothing is written.
// docs/LIMITS.md, "Authorizations".
var approvalLimits = throttle.Rules{
	throttle.Account: {Burst: 120, Every: 500 * time.Millisecond}, // a user: 120 at once, then 120 a minute
	throttle.Client:  {Burst: 60, Every: time.Second},             // a (user, client) pair: 60 at once, then 60 a minute
}

// newApprovalLimiter returns the approvals' limiter, shared by the
// replicas when cfg.Throttle is.
func newApprovalLimiter(cfg Config) *throttle.Limiter {
	return throttle.New(throttle.Config{Name: "authorize", Rules: approvalLimits, Now: cfg.Now,
		Registerer: cfg.Registerer, Shared: cfg.Throttle})
}

// approvalKeys are the keys an approval of client by user counts against:
// the user (by ID) and the (user, client) pair, at no address.
func (s *Server) approvalKeys(userID int64, clientID string) throttle.Keys {
	var ks throttle.Keys
	ks.Add(throttle.Key{Kind: throttle.Account, ID: uint64(userID)})
	ks.Add(s.approvals.NameKey(throttle.Client, strconv.FormatInt(userID, 10)+"\x00"+clientID, netip.Addr{}))
	return ks
}

// spendApproval counts one approval of req by userID, or returns the
// temporarily_unavailable redirect when the user or the pair has used up
// its budget (nothing counted, nothing written).
func (s *Server) spendApproval(ctx context.Context, req *AuthorizeRequest, userID int64) error {
	ks := s.approvalKeys(userID, req.Client.ID)
	if wait, ok := s.approvals.Check(ctx, ks); !ok {
		return s.redirectError(req.RedirectURI, req.State, WithDescription(ErrTemporarilyUnavailable,
			"too many authorizations for this user; try again in %d seconds", int(wait.Round(time.Second)/time.Second)))
	}
	s.approvals.Fail(ctx, ks)
	return nil
}

// errNoConsent: the consent an approval rests on does not hold (any more).
var errNoConsent = errors.New("the user's consent does not cover the request")

// consentCovers is the check of [data.Store.CreateConsentedCode]: the
// user's consent grant, judged against the client as stored now
// ([data.ConsentHeld]), covers the code's scopes.
func consentCovers(code data.AuthCode) func(data.Client, data.Grant, bool) error {
	return func(c data.Client, g data.Grant, found bool) error {
		if !found {
			return errNoConsent
		}
		held, ok := data.ConsentHeld(g, c)
		if !ok {
			return errNoConsent
		}
		if _, ok := scope.Subset(code.Scopes, held); !ok {
			return errNoConsent
		}
		return nil
	}
}
