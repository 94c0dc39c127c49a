package issuer

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"testing"
	"time"

	"oauthd/data"
	"oauthd/issuer/throttle"
)

// silentCode runs a prompt=none approval of q for the env's user and
// returns the code, or the OAuth error code of the redirect.
func (env *oidcEnv) silent(t *testing.T, q url.Values) (code, errCode string) {
	t.Helper()
	ctx := context.Background()
	q.Set("prompt", "none")
	login := &Login{UserID: env.user.ID, AuthTime: env.clock()}
	ar, err := env.s.ParseAuthorize(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var re *RedirectError
	step, err := env.s.Interact(ctx, ar, login)
	if errors.As(err, &re) {
		return "", re.Err.Code
	}
	if err != nil || step != StepApprove {
		t.Fatalf("Interact = %v, %v", step, err)
	}
	to, err := env.s.ApproveLogin(ctx, q, *login)
	if errors.As(err, &re) {
		return "", re.Err.Code
	}
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(to)
	return u.Query().Get("code"), ""
}

// updateClient applies fn to client id as the operator would.
func (env *oidcEnv) updateClient(t *testing.T, id string, fn func(*data.Client)) {
	t.Helper()
	if _, err := env.store.UpdateClient(context.Background(), id, func(c data.Client) (data.Client, error) {
		fn(&c)
		return c, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestSilentApprovalFollowsDecisions: prompt=none approves only what the
// user consented to under the client's current review: a scope taken from
// the client and given back, a rejection and a new approval each end in
// consent_required, and a new consent on the page makes it work again.
func TestSilentApprovalFollowsDecisions(t *testing.T) {
	env := newOIDCEnv(t)
	q := func() url.Values { return oidcAuthz(oidcRP, "openid PROFILE_READ") }
	env.approve(t, q(), env.clock()) // the consent page's Allow
	if code, e := env.silent(t, q()); code == "" {
		t.Fatalf("prompt=none after the consent: %s; want a code", e)
	}
	// The silent approval wrote no consent of its own.
	g, err := env.store.GetGrant(context.Background(), env.user.ID, oidcRP)
	if err != nil || len(g.Scopes) != 2 {
		t.Fatalf("grant after a silent approval = %+v, %v", g, err)
	}

	// Narrowed: PROFILE_READ taken away. Asking for it is invalid_scope
	// (the client lacks it); the rest still holds.
	env.updateClient(t, oidcRP, func(c *data.Client) { c.Scopes = []string{"openid", "profile", "email"} })
	if code, e := env.silent(t, oidcAuthz(oidcRP, "openid")); code == "" {
		t.Fatalf("prompt=none for what still holds after the narrowing: %s; want a code", e)
	}
	// Given back: the consent to it does not come back with it.
	env.updateClient(t, oidcRP, func(c *data.Client) { c.Scopes = append(c.Scopes, "PROFILE_READ") })
	if _, e := env.silent(t, q()); e != "consent_required" {
		t.Fatalf("prompt=none for a scope given back: %q; want consent_required", e)
	}
	if code, e := env.silent(t, oidcAuthz(oidcRP, "openid")); code == "" {
		t.Fatalf("prompt=none for openid alone after the give-back: %s; want a code", e)
	}
	// The user consents again on the page: it holds again.
	env.approve(t, q(), env.clock())
	if code, e := env.silent(t, q()); code == "" {
		t.Fatalf("prompt=none after consenting again: %s; want a code", e)
	}

	// Rejected, then approved again: nothing of the earlier consent holds.
	env.updateClient(t, oidcRP, func(c *data.Client) { c.Status, c.RejectReason = data.StatusRejected, "spam" })
	env.updateClient(t, oidcRP, func(c *data.Client) { c.Status, c.RejectReason = data.StatusApproved, "" })
	for _, scopes := range []string{"openid PROFILE_READ", "openid"} {
		if _, e := env.silent(t, oidcAuthz(oidcRP, scopes)); e != "consent_required" {
			t.Fatalf("prompt=none for %s after reject and approve: %q; want consent_required", scopes, e)
		}
	}
	env.approve(t, oidcAuthz(oidcRP, "openid"), env.clock())
	if code, e := env.silent(t, oidcAuthz(oidcRP, "openid")); code == "" {
		t.Fatalf("prompt=none after a new consent: %s; want a code", e)
	}
	// The new consent does not carry the scopes of the old one.
	if _, e := env.silent(t, q()); e != "consent_required" {
		t.Fatalf("prompt=none for PROFILE_READ, consented only before the rejection: %q; want consent_required", e)
	}
}

// TestSilentApprovalChecksWithTheCode: a consent that held when Interact
// read it but was removed before the code is made gives consent_required,
// and no code.
func TestSilentApprovalChecksWithTheCode(t *testing.T) {
	env := newOIDCEnv(t)
	ctx := context.Background()
	env.approve(t, oidcAuthz(oidcRP, "openid"), env.clock())
	q := oidcAuthz(oidcRP, "openid", "prompt", "none")
	ar, err := env.s.ParseAuthorize(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	login := Login{UserID: env.user.ID, AuthTime: env.clock()}
	if step, err := env.s.Interact(ctx, ar, &login); step != StepApprove || err != nil {
		t.Fatalf("Interact = %v, %v", step, err)
	}
	if _, err := env.store.RevokeApp(ctx, env.user.ID, oidcRP); err != nil {
		t.Fatal(err)
	}
	_, err = env.s.ApproveLogin(ctx, q, login)
	var re *RedirectError
	if !errors.As(err, &re) || re.Err.Code != "consent_required" {
		t.Fatalf("silent approval after the removal: %v; want consent_required", err)
	}
	if _, err := env.store.GetGrant(ctx, env.user.ID, oidcRP); !errors.Is(err, data.ErrNotFound) {
		t.Fatalf("a silent approval wrote a consent after the removal: %v", err)
	}
}

// TestApprovalBudget: one user's approvals are bounded per (user, client)
// and per user; past the budget the redirect is temporarily_unavailable and
// nothing is written; another user, or the same user's other app, is not
// refused; the budget refills.
func TestApprovalBudget(t *testing.T) {
	env := newOIDCEnv(t)
	ctx := context.Background()
	pair, user := approvalLimits[throttle.Client], approvalLimits[throttle.Account]
	c3 := data.Client{ID: "rp3", Name: "RP 3", UnclaimedOwner: "dev@example.com", Type: data.Confidential, Scopes: []string{"openid"},
		Secrets: []data.ClientSecret{{ID: "cs_3", Hash: data.Hash(oidcRPSecret), CreatedAt: tkT0}}, RedirectURIs: []string{tkRedirect},
		Status: data.StatusApproved, CreatedAt: tkT0, UpdatedAt: tkT0}
	if err := env.store.CreateClient(ctx, c3); err != nil {
		t.Fatal(err)
	}
	n := 0
	approve := func(uid int64, clientID string) string {
		n++
		to, err := env.s.ApproveLogin(ctx, oidcAuthz(clientID, "openid", "nonce", "n"+strconv.Itoa(n)), Login{UserID: uid, AuthTime: env.clock()})
		var re *RedirectError
		if errors.As(err, &re) {
			return re.Err.Code
		}
		if err != nil {
			t.Fatal(err)
		}
		if u, _ := url.Parse(to); u.Query().Get("code") == "" {
			t.Fatalf("no code in %s", to)
		}
		return ""
	}
	for i := range pair.Burst {
		if e := approve(env.user.ID, oidcRP); e != "" {
			t.Fatalf("approval %d of %d: %s", i+1, pair.Burst, e)
		}
	}
	spare := nonceKey("oidc-nonce\x00"+oidcRP+"\x00", "n"+strconv.Itoa(n+1))
	if e := approve(env.user.ID, oidcRP); e != "temporarily_unavailable" {
		t.Fatalf("approval past the pair's budget: %q; want temporarily_unavailable", e)
	}
	if used, _ := env.store.NonceUsed(ctx, spare); used {
		t.Fatal("a refused approval stored its nonce")
	}
	// The user's other app, and another user, are not refused.
	if e := approve(env.user.ID, oidcRP2); e != "" {
		t.Fatalf("the user's other app after one app's budget is spent: %s", e)
	}
	other, err := env.store.CreateUser(ctx, data.User{Email: "bob@example.com", CreatedAt: tkT0})
	if err != nil {
		t.Fatal(err)
	}
	if e := approve(other.ID, oidcRP); e != "" {
		t.Fatalf("another user after the first one's budget is spent: %s", e)
	}
	// The per-user ceiling: what the user's apps make together.
	spent := pair.Burst + 1
	for _, c := range []string{oidcRP2, oidcSPA} {
		for spent < user.Burst && approve(env.user.ID, c) == "" {
			spent++
		}
	}
	if spent != user.Burst {
		t.Fatalf("spent %d approvals over three apps; want the user's budget %d", spent, user.Burst)
	}
	if e := approve(env.user.ID, "rp3"); e != "temporarily_unavailable" {
		t.Fatalf("approval past the user's budget: %q; want temporarily_unavailable", e)
	}
	// It refills by itself.
	env.advance(max(pair.Every, user.Every) + time.Second)
	if e := approve(env.user.ID, oidcRP); e != "" {
		t.Fatalf("approval after the refill: %s", e)
	}
}

// TestNonceKeptForAnIDTokenLifetime: a used nonce is kept as long as an ID
// token carrying it may be accepted (the code's lifetime and the ID
// token's), not a day.
func TestNonceKeptForAnIDTokenLifetime(t *testing.T) {
	env := newOIDCEnv(t)
	ctx := context.Background()
	env.approve(t, oidcAuthz(oidcRP, "openid", "nonce", "kept"), env.clock())
	keep := env.s.cfg.CodeTTL + env.s.cfg.IDTokenTTL
	if keep > time.Hour {
		t.Fatalf("nonce kept %v", keep)
	}
	// The garbage collector removes it once that has passed, not before.
	res, err := env.store.GarbageCollect(ctx, env.clock().Add(keep-time.Second))
	if err != nil || res.Nonces != 0 {
		t.Fatalf("GC before the nonce's end = %+v, %v; want no nonce removed", res, err)
	}
	res, err = env.store.GarbageCollect(ctx, env.clock().Add(keep+time.Second))
	if err != nil || res.Nonces != 1 {
		t.Fatalf("GC after the nonce's end = %+v, %v; want its nonce removed", res, err)
	}
}
