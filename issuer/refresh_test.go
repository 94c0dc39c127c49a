package issuer

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
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
	at5 := data.Family{TokenHash: cur, PrevHash: prev, Tagged: true, RotatedAt: t0, Generation: 5}
	restoredUntagged := data.Family{TokenHash: cur, RotatedAt: t0, Generation: 5}
	const grace = 30 * time.Second
	gen := func(g uint64) presentedRefresh {
		return presentedRefresh{hash: other, tag: data.TagValid, gen: g, hasGen: true}
	}
	tests := []struct {
		name      string
		f         data.Family
		presented []byte
		tag       data.TagCheck
		now       time.Time
		grace     time.Duration
		want      verdict
		p         *presentedRefresh // instead of presented and tag
	}{
		{"current", tagged, cur, data.TagValid, t0, grace, rotateCurrent, nil},
		{"current, untagged family", untagged, cur, data.Untagged, t0, grace, rotateCurrent, nil},
		{"previous within the grace", tagged, prev, data.TagValid, t0.Add(grace - time.Nanosecond), grace, rotateGrace, nil},
		{"previous at the grace's end", tagged, prev, data.TagValid, t0.Add(grace), grace, genuineReplay, nil},
		{"previous, grace off", tagged, prev, data.TagValid, t0, 0, genuineReplay, nil},
		{"previous once the grace was used", graceUsed, prev, data.TagValid, t0, grace, genuineReplay, nil},
		{"previous untagged (the first rotation after the upgrade was lost)", migrated, prev, data.Untagged, t0, grace, rotateGrace, nil},
		{"older tagged token", tagged, other, data.TagValid, t0, grace, genuineReplay, nil},
		{"last untagged token, long after", migrated, legacy, data.Untagged, t0.Add(time.Hour), grace, genuineReplay, nil},
		{"unknown untagged token on a tagged family (forged)", tagged, other, data.Untagged, t0, grace, forged, nil},
		{"unknown untagged token on a migrated family (forged)", migrated, other, data.Untagged, t0, grace, forged, nil},
		{"unknown untagged token on an untagged family (as before tags)", untagged, other, data.Untagged, t0, grace, genuineReplay, nil},
		{"empty hash matches nothing", data.Family{Tagged: true}, nil, data.Untagged, t0, grace, forged, nil},
		// Generations (docs/SECURITY.md "Refresh tokens after a restore").
		{"a later generation (issued after the stored state)", at5, nil, 0, t0, grace, rotateAhead, ptr(gen(6))},
		{"a much later generation", at5, nil, 0, t0, grace, rotateAhead, ptr(gen(900))},
		{"a later generation on a restored untagged family", restoredUntagged, nil, 0, t0, grace, rotateAhead, ptr(gen(6))},
		{"the stored generation, not the current token", at5, nil, 0, t0, grace, genuineReplay, ptr(gen(5))},
		{"an earlier generation", at5, nil, 0, t0, grace, genuineReplay, ptr(gen(2))},
		{"current, any generation", at5, nil, 0, t0, grace, rotateCurrent, &presentedRefresh{hash: cur, tag: data.TagValid, gen: 9, hasGen: true}},
		{"previous, a later generation claimed", at5, nil, 0, t0.Add(time.Hour), grace, genuineReplay, &presentedRefresh{hash: prev, tag: data.TagValid, gen: 9, hasGen: true}},
		{"a later generation without a valid tag", at5, nil, 0, t0, grace, forged, &presentedRefresh{hash: other, tag: data.Untagged, gen: 9, hasGen: true}},
		{"a tagged token without a generation", at5, nil, 0, t0, grace, genuineReplay, &presentedRefresh{hash: other, tag: data.TagValid}},
	}
	for _, tc := range tests {
		p := presentedRefresh{hash: tc.presented, tag: tc.tag}
		if tc.p != nil {
			p = *tc.p
		}
		if got := judgeRefresh(&tc.f, p, tc.now, tc.grace); got != tc.want {
			t.Errorf("%s: judgeRefresh = %d; want %d", tc.name, got, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

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
	env.refreshFails("forged", data.NewRefreshToken(id, 0, make([]byte, data.RefreshKeySize)))
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
		"bad tag, another client":          answer("other", env.otherSecret, data.NewRefreshToken(id, 0, make([]byte, data.RefreshKeySize))),
	} {
		if got != none {
			t.Errorf("%s: %s; want the answer to an unknown family, %s", name, got, none)
		}
	}
}

// restoredEnv makes a grant, rotates it once, takes a backup of its family
// (as a restore would bring it back), then rotates it twice more. It
// returns the tokens in the order issued (gens 0 to 3) and a restore that
// puts the backup back in the store.
func restoredEnv(t *testing.T) (env *tkEnv, rts []string, restore func()) {
	env = newTkEnv(t)
	rts = []string{env.exchange().RefreshToken}
	rts = append(rts, env.refreshOK(rts[0]).RefreshToken)
	id, _ := data.ParseRefreshToken(rts[0])
	backup, err := env.store.GetFamily(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		rts = append(rts, env.refreshOK(rts[len(rts)-1]).RefreshToken)
	}
	for i, rt := range rts {
		if g, ok := data.RefreshGeneration(rt); !ok || g != uint64(i) {
			t.Fatalf("token %d carries generation %d, %v; want %d", i, g, ok, i)
		}
	}
	return env, rts, func() {
		if _, err := env.store.RotateRefreshToken(context.Background(), id, func(data.Family) (data.Family, error) { return backup, nil }); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRestoredFamilyAcceptsLaterToken: after a restore, the client's
// newest token (issued after the backup) rotates the family once, forward,
// audited and counted but not as reuse; the same token presented again is
// reuse and revokes. docs/SECURITY.md "Refresh tokens after a restore".
func TestRestoredFamilyAcceptsLaterToken(t *testing.T) {
	env, rts, restore := restoredEnv(t)
	restore()
	next := env.refreshOK(rts[3]).RefreshToken
	if g, _ := data.RefreshGeneration(next); g != 4 {
		t.Fatalf("the token after the restored jump has generation %d; want 4", g)
	}
	logs := env.logs.String()
	if !strings.Contains(logs, `"event":"refresh_token_after_restore"`) || strings.Contains(logs, "refresh_token_reuse") {
		t.Fatalf("audit: want refresh_token_after_restore and no reuse: %s", logs)
	}
	if got := tkCounter(t, env.s.metrics.refreshAhead); got != 1 {
		t.Fatalf("oauthd_refresh_after_restore_total = %v; want 1", got)
	}
	if got := tkCounter(t, env.s.metrics.refreshReuse); got != 0 {
		t.Fatalf("oauthd_refresh_reuse_detected_total = %v; want 0", got)
	}
	// The family goes on from there.
	next = env.refreshOK(next).RefreshToken
	// The newest token before the restore, presented a second time: reuse.
	env.refreshFails("the newest token, presented again after the restore", rts[3])
	if env.familyExists(next) {
		t.Fatal("a replay of the token that moved the family forward left it alive")
	}
	if got := tkCounter(t, env.s.metrics.refreshReuse); got != 1 {
		t.Fatalf("oauthd_refresh_reuse_detected_total = %v; want 1", got)
	}
}

// TestRestoredFamilyReplays: after a restore, a token used before the
// backup is still reuse; and of two tokens issued after it, the first
// presented wins and the other is reuse (a stolen token from after the
// backup is caught when the client comes back, as without a restore).
func TestRestoredFamilyReplays(t *testing.T) {
	t.Run("used before the backup", func(t *testing.T) {
		env, rts, restore := restoredEnv(t)
		restore()
		env.refreshFails("a token used before the backup", rts[0])
		if env.familyExists(rts[1]) {
			t.Fatal("a replay of a token used before the backup left the family alive")
		}
	})
	t.Run("two tokens from after the backup", func(t *testing.T) {
		env, rts, restore := restoredEnv(t)
		restore()
		stolen := env.refreshOK(rts[2]).RefreshToken // gen 2: moves the family to 3
		env.refreshFails("the client's own newest token after another took its place", rts[3])
		if env.familyExists(stolen) {
			t.Fatal("the family survived two presentations of its third generation")
		}
	})
	t.Run("the backup's current token after the newest", func(t *testing.T) {
		env, rts, restore := restoredEnv(t)
		restore()
		env.refreshOK(rts[3])
		env.refreshFails("the token current in the backup", rts[1])
	})
}

// TestForgedGenerationChangesNothing: a token of a known family whose
// generation was raised, or carried over to another family, or given a tag
// of another key, is a forgery: refused, the family untouched, not reuse.
func TestForgedGenerationChangesNothing(t *testing.T) {
	env, rts, restore := restoredEnv(t)
	restore()
	id, _ := data.ParseRefreshToken(rts[3])
	before, _ := env.store.GetFamily(context.Background(), id)
	// rts[1] with its generation (bytes 8 to 15 of its secret) raised to 9.
	prefixAndID, rest, _ := strings.Cut(rts[1], ".")
	secret, tag, _ := strings.Cut(rest, ".")
	raw, err := base64.RawURLEncoding.DecodeString(secret)
	if err != nil {
		t.Fatal(err)
	}
	raw[15] = 9
	raised := prefixAndID + "." + base64.RawURLEncoding.EncodeToString(raw)
	other := env.exchange().RefreshToken
	otherID, _ := data.ParseRefreshToken(other)
	for name, tok := range map[string]string{
		"generation raised, tag kept":   raised + "." + tag,
		"generation raised, no tag":     raised,
		"another key's tag":             data.NewRefreshToken(id, 9, make([]byte, data.RefreshKeySize)),
		"another family's token, moved": strings.Replace(other, otherID, id, 1),
	} {
		env.refreshFails(name, tok)
		after, err := env.store.GetFamily(context.Background(), id)
		if err != nil || after.Generation != before.Generation || !data.Equal(after.TokenHash, before.TokenHash) {
			t.Fatalf("%s: the family changed: %+v → %+v (%v)", name, before, after, err)
		}
	}
	if got := tkCounter(t, env.s.metrics.refreshReuse); got != 0 {
		t.Fatalf("oauthd_refresh_reuse_detected_total = %v; want 0", got)
	}
	env.refreshOK(rts[3]) // the client's newest token still moves it forward
}

// TestRestoredFamilyIntrospects: introspection says of a refresh token
// what the token endpoint would do with it: after a restore, the client's
// newest token (issued after the backup) is active until it is used, and
// a token used before the backup is not.
func TestRestoredFamilyIntrospects(t *testing.T) {
	env, rts, restore := restoredEnv(t)
	restore()
	active := func(token string) bool {
		t.Helper()
		rec := env.do(tkReq{path: "/v2/auth/oauth2/introspect", body: tkForm("token", token), header: [][2]string{tkBasic("conf", env.secretA)}})
		if rec.Code != http.StatusOK {
			t.Fatalf("introspect: %d %s", rec.Code, rec.Body)
		}
		return strings.Contains(rec.Body.String(), `"active":true`)
	}
	if !active(rts[3]) {
		t.Error("the newest token, issued after the backup, introspects as inactive; refresh accepts it")
	}
	if active(rts[0]) {
		t.Error("a token used before the backup introspects as active")
	}
	next := env.refreshOK(rts[3]).RefreshToken
	if active(rts[3]) {
		t.Error("the token that moved the family forward is still active after its use")
	}
	if !active(next) {
		t.Error("the family's new current token introspects as inactive")
	}
}
