package issuer

import (
	"context"
	"net/http"
	"testing"
	"time"

	"oauthd/data"
)

// TestJudgeRefresh is the decision table of judgeRefresh.
func TestJudgeRefresh(t *testing.T) {
	t0 := tkT0
	cur, prev, legacy, other := data.Hash("cur"), data.Hash("prev"), data.Hash("legacy"), data.Hash("other")
	tagged := data.Family{TokenHash: cur, PrevHash: prev, Tagged: true, RotatedAt: t0}
	migrated := data.Family{TokenHash: cur, PrevHash: prev, LegacyHash: legacy, Tagged: true, RotatedAt: t0}
	graceUsed := data.Family{TokenHash: cur, Tagged: true, RotatedAt: t0}
	untagged := data.Family{TokenHash: cur, RotatedAt: t0} // last rotated by a release before tags
	const grace = 30 * time.Second
	tests := []struct {
		name      string
		f         data.Family
		presented []byte
		tag       data.TagCheck
		now       time.Time
		grace     time.Duration
		want      verdict
	}{
		{"current", tagged, cur, data.TagValid, t0, grace, rotateCurrent},
		{"current, untagged family", untagged, cur, data.Untagged, t0, grace, rotateCurrent},
		{"previous within the grace", tagged, prev, data.TagValid, t0.Add(grace - time.Nanosecond), grace, rotateGrace},
		{"previous at the grace's end", tagged, prev, data.TagValid, t0.Add(grace), grace, genuineReplay},
		{"previous, grace off", tagged, prev, data.TagValid, t0, 0, genuineReplay},
		{"previous once the grace was used", graceUsed, prev, data.TagValid, t0, grace, genuineReplay},
		{"previous untagged (the first rotation after the upgrade was lost)", migrated, prev, data.Untagged, t0, grace, rotateGrace},
		{"older tagged token", tagged, other, data.TagValid, t0, grace, genuineReplay},
		{"last untagged token, long after", migrated, legacy, data.Untagged, t0.Add(time.Hour), grace, genuineReplay},
		{"unknown untagged token on a tagged family (forged)", tagged, other, data.Untagged, t0, grace, forged},
		{"unknown untagged token on a migrated family (forged)", migrated, other, data.Untagged, t0, grace, forged},
		{"unknown untagged token on an untagged family (as before tags)", untagged, other, data.Untagged, t0, grace, genuineReplay},
		{"empty hash matches nothing", data.Family{Tagged: true}, nil, data.Untagged, t0, grace, forged},
	}
	for _, tc := range tests {
		if got := judgeRefresh(&tc.f, tc.presented, tc.tag, tc.now, tc.grace); got != tc.want {
			t.Errorf("%s: judgeRefresh = %d; want %d", tc.name, got, tc.want)
		}
	}
}

// refreshOK refreshes rt as conf and returns the new tokens.
func (env *tkEnv) refreshOK(rt string) tkTokens {
	env.t.Helper()
	return env.mustTokens(env.do(env.refreshReq("conf", env.secretA, rt)))
}

// refreshFails checks that refreshing rt as conf answers invalid_grant.
func (env *tkEnv) refreshFails(what, rt string) {
	env.t.Helper()
	rec := env.do(env.refreshReq("conf", env.secretA, rt))
	if rec.Code != http.StatusBadRequest || tkOAuthErr(env.t, rec) != "invalid_grant" {
		env.t.Fatalf("%s: refresh = %d %s; want 400 invalid_grant", what, rec.Code, rec.Body)
	}
}

func (env *tkEnv) familyExists(rt string) bool {
	id, _ := data.ParseRefreshToken(rt)
	_, err := env.store.GetFamily(context.Background(), id)
	return err == nil
}

// TestReuseGraceClock: the grace is measured from the rotation that
// replaced the token, on the injected clock.
func TestReuseGraceClock(t *testing.T) {
	env := newTkEnv(t, func(c *Config) { c.RefreshReuseGrace = 30 * time.Second })
	t0 := env.exchange()
	env.refreshOK(t0.RefreshToken)
	env.advance(29 * time.Second)
	t2 := env.refreshOK(t0.RefreshToken) // within the grace
	t3 := env.refreshOK(t2.RefreshToken)
	env.advance(31 * time.Second)
	env.refreshFails("the previous token after the grace", t2.RefreshToken)
	if env.familyExists(t3.RefreshToken) {
		t.Fatal("a replay after the grace left the family alive")
	}
}

// TestUntaggedTokensKeepWorking: a family made by a release before tags
// (its current token untagged) refreshes with that token; the next token is
// tagged; a replay of the old untagged token is genuine and revokes, even
// after more rotations; an unknown untagged token on it then is a forgery.
func TestUntaggedTokensKeepWorking(t *testing.T) {
	env := newTkEnv(t)
	old := env.exchange()
	id, _ := data.ParseRefreshToken(old.RefreshToken)
	legacyRT := data.PrefixRefreshToken + id + "." + data.NewSecret("")
	// Rewrite the family as an earlier release left it.
	if _, err := env.store.RotateRefreshToken(context.Background(), id, func(f data.Family) (data.Family, error) {
		f.TokenHash, f.Tagged, f.PrevHash = data.Hash(legacyRT), false, nil
		return f, nil
	}); err != nil {
		t.Fatal(err)
	}
	t1 := env.refreshOK(legacyRT)
	if data.CheckRefreshTag(t1.RefreshToken, env.s.refreshKey) != data.TagValid {
		t.Fatal("the token after an untagged one is not tagged")
	}
	t2 := env.refreshOK(t1.RefreshToken)
	t3 := env.refreshOK(t2.RefreshToken)
	forged := data.PrefixRefreshToken + id + "." + data.NewSecret("")
	env.refreshFails("an unknown untagged token on a migrated family", forged)
	if !env.familyExists(t3.RefreshToken) {
		t.Fatal("an unknown untagged token revoked a family whose current token is tagged")
	}
	env.refreshFails("a replay of the last untagged token, three rotations later", legacyRT)
	if env.familyExists(t3.RefreshToken) {
		t.Fatal("a genuine replay of the last untagged token did not revoke the family")
	}
}

// TestUntaggedFamilyUnknownTokenRevokes: on a family not rotated since
// tags began, an unknown untagged token revokes, as before.
func TestUntaggedFamilyUnknownTokenRevokes(t *testing.T) {
	env := newTkEnv(t)
	old := env.exchange()
	id, _ := data.ParseRefreshToken(old.RefreshToken)
	legacyRT := data.PrefixRefreshToken + id + "." + data.NewSecret("")
	if _, err := env.store.RotateRefreshToken(context.Background(), id, func(f data.Family) (data.Family, error) {
		f.TokenHash, f.Tagged, f.PrevHash = data.Hash(legacyRT), false, nil
		return f, nil
	}); err != nil {
		t.Fatal(err)
	}
	env.refreshFails("an unknown untagged token", data.PrefixRefreshToken+id+"."+data.NewSecret(""))
	if env.familyExists(legacyRT) {
		t.Fatal("the family survived; before tags an unknown token revoked it")
	}
}

// TestForgedTagWritesNothing: a token with a bad tag is refused before the
// store is touched.
func TestForgedTagWritesNothing(t *testing.T) {
	env := newTkEnv(t)
	tok := env.exchange()
	id, _ := data.ParseRefreshToken(tok.RefreshToken)
	before, _ := env.store.GetFamily(context.Background(), id)
	env.refreshFails("forged", data.NewRefreshToken(id, make([]byte, data.RefreshKeySize)))
	after, _ := env.store.GetFamily(context.Background(), id)
	if after.Generation != before.Generation || !data.Equal(after.TokenHash, before.TokenHash) {
		t.Fatalf("family changed: %+v → %+v", before, after)
	}
	env.refreshOK(tok.RefreshToken)
}

// TestNarrowingLegacy: an unrestricted (legacy) grant keeps the seed's
// rule after its client is migrated: it stays unrestricted until the user
// authorizes again; and a scoped grant is not narrowed while its client is
// still legacy (no scope list to narrow to).
func TestNarrowingLegacy(t *testing.T) {
	env := newTkEnv(t)
	ctx := context.Background()
	exchangeLegacy := func(o tkCodeOpts) tkTokens {
		o.client = "legacy"
		code := env.code(o)
		return env.mustTokens(env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code,
			"redirect_uri", tkRedirect, "client_id", "legacy", "client_secret", env.legacySecret)}))
	}
	unrestricted := exchangeLegacy(tkCodeOpts{unrestricted: true})
	scoped := exchangeLegacy(tkCodeOpts{scopes: []string{"PROFILE_READ", "BOOKING_READ"}})
	refresh := func(rt string) tkTokens {
		return env.mustTokens(env.do(env.refreshReq("legacy", env.legacySecret, rt)))
	}
	if got := refresh(scoped.RefreshToken); got.Scope != "PROFILE_READ BOOKING_READ" {
		t.Fatalf("scoped grant of a legacy client = %q; want unchanged", got.Scope)
	}
	if _, err := env.store.UpdateClient(ctx, "legacy", func(c data.Client) (data.Client, error) {
		c.Legacy, c.Scopes = false, []string{"PROFILE_READ"}
		return c, nil
	}); err != nil {
		t.Fatal(err)
	}
	got := refresh(unrestricted.RefreshToken)
	if got.Scope != "" {
		t.Fatalf("unrestricted grant after the migration = scope %q; want unrestricted (no scope)", got.Scope)
	}
	claims, err := env.s.cfg.Verifier.Verify(ctx, got.AccessToken)
	if err != nil || !claims.Unrestricted {
		t.Fatalf("access token after the migration: %+v, %v; want unrestricted", claims, err)
	}
}

// TestForgeryLearnsNothing: a forged token for a live family, presented by
// any client, gets the very answer of a token of no family at all.
func TestForgeryLearnsNothing(t *testing.T) {
	env := newTkEnv(t)
	tok := env.exchange()
	env.refreshOK(tok.RefreshToken) // the family's current token is tagged now
	id, _ := data.ParseRefreshToken(tok.RefreshToken)
	answer := func(client, secret, rt string) string {
		rec := env.do(env.refreshReq(client, secret, rt))
		if rec.Code != http.StatusBadRequest {
			t.Fatalf("refresh = %d %s; want 400", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	none := answer("other", env.otherSecret, data.PrefixRefreshToken+data.NewFamilyID(time.Now())+"."+data.NewSecret(""))
	for name, got := range map[string]string{
		"untagged forgery, owner":          answer("conf", env.secretA, data.PrefixRefreshToken+id+"."+data.NewSecret("")),
		"untagged forgery, another client": answer("other", env.otherSecret, data.PrefixRefreshToken+id+"."+data.NewSecret("")),
		"bad tag, another client":          answer("other", env.otherSecret, data.NewRefreshToken(id, make([]byte, data.RefreshKeySize))),
	} {
		if got != none {
			t.Errorf("%s: %s; want the answer to an unknown family, %s", name, got, none)
		}
	}
}
