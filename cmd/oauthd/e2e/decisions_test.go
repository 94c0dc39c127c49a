package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
	"oauthd/data"
)

// The issue "Decisions that hold", items 2 to 5, through the real binary
// over HTTP (docs/DESIGN.md "What each decision reaches, and when").

// startE2EWith is startE2E with extra serve flags, keeping serve's log.
func startE2EWith(t *testing.T, args ...string) (*e2e, *logSink) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "o.db")
	s, sink := startServeLogged(t, db, args...)
	var u struct {
		ID int64 `json:"id"`
	}
	oneJSON(t, mustOauthd(t, db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--time-zone", e2eTimeZone, "--password-stdin", "--json"), &u)
	return &e2e{server: s, userID: u.ID}, sink
}

// grantTokens runs the code flow for a confidential client and exchanges
// the code; it fails the test unless the exchange answers 200.
func (e *e2e) grantTokens(t *testing.T, id, secret string, scopes ...string) e2eTokenResponse {
	t.Helper()
	conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, scopes...)
	code := e.codeFlow(t, context.Background(), consenttest.New(), conf)
	r := e.exchangeCode(t, id, secret, code)
	if r.Status != http.StatusOK {
		t.Fatalf("code exchange = %d %v", r.Status, r.Body)
	}
	return r
}

func (e *e2e) exchangeCode(t *testing.T, id, secret, code string) e2eTokenResponse {
	t.Helper()
	return e2ePost(t, e.tokenURL(), url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {e2eRedirect}, "client_id": {id}, "client_secret": {secret}}, "", "")
}

// mustRefresh refreshes rt and fails the test unless it answers 200.
func (e *e2e) mustRefresh(t *testing.T, id, secret, rt string) e2eTokenResponse {
	t.Helper()
	r := e.refresh(t, id, secret, rt)
	if r.Status != http.StatusOK || r.str("refresh_token") == "" {
		t.Fatalf("refresh = %d %v; want 200 with tokens", r.Status, r.Body)
	}
	return r
}

// wantInvalidGrant checks that a refresh of rt answers 400 invalid_grant.
func (e *e2e) wantInvalidGrant(t *testing.T, what, id, secret, rt string) {
	t.Helper()
	if r := e.refresh(t, id, secret, rt); r.Status != http.StatusBadRequest || r.Body["error"] != "invalid_grant" {
		t.Fatalf("%s: refresh = %d %v; want 400 invalid_grant", what, r.Status, r.Body)
	}
}

// wantRevokedAccess checks that the server's own checks refuse the access
// token at once: /v2/me 401 invalid_token, and (when the client can still
// authenticate, secret != "") introspection {"active": false}.
func (e *e2e) wantRevokedAccess(t *testing.T, what, id, secret, at string) {
	t.Helper()
	if status, body := e.me(t, at); status != http.StatusUnauthorized || !strings.Contains(body, `"invalid_token"`) {
		t.Fatalf("%s: /v2/me = %d %s; want 401 invalid_token", what, status, body)
	}
	if secret == "" {
		return
	}
	if got := e.introspect(t, id, secret, at); len(got) != 1 || got["active"] != false {
		t.Fatalf("%s: introspection = %v; want exactly {\"active\": false}", what, got)
	}
}

// wantLiveAccess checks the opposite: /v2/me 200 and active.
func (e *e2e) wantLiveAccess(t *testing.T, what, id, secret, at string) {
	t.Helper()
	e.wantMe(t, at)
	if got := e.introspect(t, id, secret, at); got["active"] != true {
		t.Fatalf("%s: introspection = %v; want active", what, got)
	}
}

// revoke posts an RFC 7009 revocation with HTTP Basic and returns the
// status and body.
func (e *e2e) revoke(t *testing.T, id, secret, tok, hint string) (int, string) {
	t.Helper()
	v := url.Values{"token": {tok}}
	if hint != "" {
		v.Set("token_type_hint", hint)
	}
	req, _ := http.NewRequest(http.MethodPost, e.base+"/v2/auth/oauth2/revoke", strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric returns the value of the unlabelled counter name at /metrics.
func (e *e2e) metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(e.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s = %q", name, v)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return 0
}

// familyOf returns the family ID a refresh token names.
func familyOf(t *testing.T, rt string) string {
	t.Helper()
	id, ok := data.ParseRefreshToken(rt)
	if !ok {
		t.Fatalf("refresh token %q does not parse", rt)
	}
	return id
}

func randB64(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// TestNarrowingReachesGrants (item 2): when the client loses a scope, the
// grant's next refresh carries only the scopes the client still has; the
// grant keeps the narrowed set (a scope given back does not return without
// a new consent); a grant left with no scope is revoked with invalid_grant,
// and its access tokens with it.
func TestNarrowingReachesGrants(t *testing.T) {
	e := startE2E(t)
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ", "BOOKING_READ"})
	tok := e.grantTokens(t, id, secret, "PROFILE_READ", "BOOKING_READ")
	if got := tok.str("scope"); got != "PROFILE_READ BOOKING_READ" {
		t.Fatalf("granted scope = %q", got)
	}

	e.cli(t, "clients", "scopes", "set", id, "PROFILE_READ")
	r := e.mustRefresh(t, id, secret, tok.str("refresh_token"))
	if got := r.str("scope"); got != "PROFILE_READ" {
		t.Fatalf("scope after the client lost BOOKING_READ = %q; want PROFILE_READ", got)
	}
	if got := e.introspect(t, id, secret, r.str("access_token")); got["scope"] != "PROFILE_READ" {
		t.Fatalf("access token scope = %v; want PROFILE_READ", got["scope"])
	}
	if got := e.introspect(t, id, secret, r.str("refresh_token")); got["scope"] != "PROFILE_READ" {
		t.Fatalf("refresh token scope = %v; want PROFILE_READ (the grant itself narrowed)", got["scope"])
	}

	// Given back to the client: the grant does not widen again.
	e.cli(t, "clients", "scopes", "set", id, "PROFILE_READ", "BOOKING_READ")
	r = e.mustRefresh(t, id, secret, r.str("refresh_token"))
	if got := r.str("scope"); got != "PROFILE_READ" {
		t.Fatalf("scope after BOOKING_READ came back to the client = %q; want PROFILE_READ until the user consents again", got)
	}
	// Asking for it explicitly does not widen either (RFC 6749 §6).
	v := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r.str("refresh_token")}, "client_id": {id},
		"client_secret": {secret}, "scope": {"PROFILE_READ BOOKING_READ"}}
	if w := e2ePost(t, e.tokenURL(), v, "", ""); w.Status != http.StatusBadRequest || w.Body["error"] != "invalid_scope" {
		t.Fatalf("refresh asking for the dropped scope = %d %v; want 400 invalid_scope", w.Status, w.Body)
	}

	// Left with none: revoked.
	at := r.str("access_token")
	e.cli(t, "clients", "scopes", "set", id, "BOOKING_READ")
	e.wantInvalidGrant(t, "refresh of a grant left with no scope", id, secret, r.str("refresh_token"))
	e.wantInvalidGrant(t, "the same refresh again", id, secret, r.str("refresh_token"))
	e.wantRevokedAccess(t, "access token of the emptied grant", id, secret, at)

	// A new authorization gets what the client has now.
	tok = e.grantTokens(t, id, secret, "BOOKING_READ")
	if got := e.mustRefresh(t, id, secret, tok.str("refresh_token")).str("scope"); got != "BOOKING_READ" {
		t.Fatalf("scope of a new grant = %q", got)
	}
}

// TestRevocationReachesAccessTokens (item 3): every way a family is revoked
// reaches its access tokens at /v2/me and introspection at once.
func TestRevocationReachesAccessTokens(t *testing.T) {
	e := startE2E(t)
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})

	t.Run("reuse detection", func(t *testing.T) {
		t0 := e.grantTokens(t, id, secret, "PROFILE_READ")
		t1 := e.mustRefresh(t, id, secret, t0.str("refresh_token"))
		t2 := e.mustRefresh(t, id, secret, t1.str("refresh_token"))
		for _, at := range []string{t0.str("access_token"), t1.str("access_token"), t2.str("access_token")} {
			e.wantLiveAccess(t, "before the replay", id, secret, at)
		}
		// t0's token is neither current nor the previous one: a replay.
		e.wantInvalidGrant(t, "replay of the first refresh token", id, secret, t0.str("refresh_token"))
		for i, at := range []string{t0.str("access_token"), t1.str("access_token"), t2.str("access_token")} {
			e.wantRevokedAccess(t, "access token "+strconv.Itoa(i)+" of a grant revoked by reuse", id, secret, at)
		}
		e.wantInvalidGrant(t, "the current refresh token after the replay", id, secret, t2.str("refresh_token"))
	})

	t.Run("code replay", func(t *testing.T) {
		conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
		code := e.codeFlow(t, context.Background(), consenttest.New(), conf)
		tok := e.exchangeCode(t, id, secret, code)
		if tok.Status != http.StatusOK {
			t.Fatalf("exchange = %d %v", tok.Status, tok.Body)
		}
		e.wantLiveAccess(t, "before the code replay", id, secret, tok.str("access_token"))
		if r := e.exchangeCode(t, id, secret, code); r.Status != http.StatusBadRequest || r.Body["error"] != "invalid_grant" {
			t.Fatalf("code replay = %d %v", r.Status, r.Body)
		}
		e.wantRevokedAccess(t, "access token of a replayed code", id, secret, tok.str("access_token"))
	})

	t.Run("RFC 7009 with the refresh token", func(t *testing.T) {
		tok := e.grantTokens(t, id, secret, "PROFILE_READ")
		if status, body := e.revoke(t, id, secret, tok.str("refresh_token"), "refresh_token"); status != http.StatusOK {
			t.Fatalf("revoke = %d %s", status, body)
		}
		e.wantRevokedAccess(t, "access token of a revoked refresh token", id, secret, tok.str("access_token"))
	})

	for _, hint := range []string{"access_token", ""} {
		t.Run("RFC 7009 with the access token, hint "+strconv.Quote(hint), func(t *testing.T) {
			tok := e.grantTokens(t, id, secret, "PROFILE_READ")
			next := e.mustRefresh(t, id, secret, tok.str("refresh_token"))
			// Another client cannot revoke it (RFC 7009 §2.1): 200, nothing changes.
			otherID, otherSecret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
			if status, _ := e.revoke(t, otherID, otherSecret, tok.str("access_token"), hint); status != http.StatusOK {
				t.Fatalf("another client's revocation = %d; want 200", status)
			}
			e.wantLiveAccess(t, "after another client's revocation", id, secret, next.str("access_token"))

			if status, body := e.revoke(t, id, secret, tok.str("access_token"), hint); status != http.StatusOK {
				t.Fatalf("revoke access token = %d %s", status, body)
			}
			e.wantRevokedAccess(t, "the revoked access token", id, secret, tok.str("access_token"))
			e.wantRevokedAccess(t, "a later access token of the same grant", id, secret, next.str("access_token"))
			e.wantInvalidGrant(t, "refresh after revoking by access token", id, secret, next.str("refresh_token"))
		})
	}

	t.Run("client rejected", func(t *testing.T) {
		rid, rsecret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
		tok := e.grantTokens(t, rid, rsecret, "PROFILE_READ")
		e.wantLiveAccess(t, "before the rejection", rid, rsecret, tok.str("access_token"))
		e.cli(t, "clients", "reject", rid, "--reason", "abuse")
		e.wantRevokedAccess(t, "access token of a rejected client", rid, "", tok.str("access_token"))
		if r := e.refresh(t, rid, rsecret, tok.str("refresh_token")); r.Status != http.StatusUnauthorized {
			t.Fatalf("refresh by the rejected client = %d %v; want 401", r.Status, r.Body)
		}
		// Approved again: the grants stay revoked; users authorize again.
		e.cli(t, "clients", "approve", rid)
		e.wantRevokedAccess(t, "access token after the client was approved again", rid, rsecret, tok.str("access_token"))
		e.wantInvalidGrant(t, "refresh token after the client was approved again", rid, rsecret, tok.str("refresh_token"))
	})
}

// TestForgedRefreshTokenChangesNothing (item 4): the family ID (in every
// refresh token, and in access tokens' grant_id) is not enough to revoke a
// grant: a refresh token whose secret was never issued for the family gets
// invalid_grant and changes nothing, and raises no theft alarm.
func TestForgedRefreshTokenChangesNothing(t *testing.T) {
	e, logs := startE2EWith(t)
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
	tok := e.grantTokens(t, id, secret, "PROFILE_READ")
	rt := tok.str("refresh_token")
	fid := familyOf(t, rt)
	claims, _ := e.verifyJWT(t, context.Background(), tok.str("access_token"))
	if claims["grant_id"] != fid {
		t.Fatalf("access token grant_id = %v; want the family ID %s", claims["grant_id"], fid)
	}
	realTag := rt[strings.LastIndexByte(rt, '.')+1:]
	forgeries := map[string]string{
		"tagged form, random tag":        data.PrefixRefreshToken + fid + "." + randB64(32) + "." + randB64(16),
		"untagged form of earlier times": data.PrefixRefreshToken + fid + "." + randB64(32),
		"real tag on another secret":     data.PrefixRefreshToken + fid + "." + randB64(32) + "." + realTag,
	}
	reuseBefore := e.metric(t, "oauthd_refresh_reuse_detected_total")
	for name, forged := range forgeries {
		if _, ok := data.ParseRefreshToken(forged); !ok {
			t.Fatalf("%s: the forgery does not even parse", name)
		}
		e.wantInvalidGrant(t, name, id, secret, forged)
		// Nothing changed: the access token and the refresh token still work.
		e.wantLiveAccess(t, name, id, secret, tok.str("access_token"))
	}
	if got := e.metric(t, "oauthd_refresh_forged_total"); got != float64(len(forgeries)) {
		t.Errorf("oauthd_refresh_forged_total = %v; want %d", got, len(forgeries))
	}
	if got := e.metric(t, "oauthd_refresh_reuse_detected_total"); got != reuseBefore {
		t.Errorf("a forgery counted as reuse: %v → %v", reuseBefore, got)
	}
	if lines := logs.grep(`refresh_token_reuse`); len(lines) > 0 {
		t.Errorf("a forgery raised the theft alarm: %q", lines)
	}
	next := e.mustRefresh(t, id, secret, rt)

	// Revocation and introspection are no way in either.
	for _, forged := range forgeries {
		if status, _ := e.revoke(t, id, secret, forged, ""); status != http.StatusOK {
			t.Fatalf("revoke of a forgery = %d; want 200", status)
		}
		if got := e.introspect(t, id, secret, forged); got["active"] != false {
			t.Fatalf("introspection of a forgery = %v", got)
		}
	}
	next = e.mustRefresh(t, id, secret, next.str("refresh_token"))

	// Only a token really issued for the family, replayed, revokes it.
	e.wantInvalidGrant(t, "genuine replay", id, secret, rt)
	e.wantInvalidGrant(t, "current token after the genuine replay", id, secret, next.str("refresh_token"))
	if lines := logs.await(1, 5*time.Second, `refresh_token_reuse`); len(lines) != 1 {
		t.Errorf("audit records of the genuine replay = %q; want 1", lines)
	}
}

// TestReuseGrace (item 5): within --refresh-reuse-grace the immediately
// previous refresh token (its rotation's response lost) may be presented
// once more and rotates the family again; the token that was current then
// dies, so there is one live chain, never two. With --refresh-reuse-grace 0
// the previous token revokes the family, as before.
func TestReuseGrace(t *testing.T) {
	e, logs := startE2EWith(t) // the default grace (30s)
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})

	t.Run("lost response, then the chain goes on", func(t *testing.T) {
		t0 := e.grantTokens(t, id, secret, "PROFILE_READ")
		e.mustRefresh(t, id, secret, t0.str("refresh_token")) // its response is lost
		t2 := e.mustRefresh(t, id, secret, t0.str("refresh_token"))
		t3 := e.mustRefresh(t, id, secret, t2.str("refresh_token"))
		e.wantLiveAccess(t, "after the grace rotation", id, secret, t3.str("access_token"))
	})
	t.Run("once more, not twice", func(t *testing.T) {
		t0 := e.grantTokens(t, id, secret, "PROFILE_READ")
		e.mustRefresh(t, id, secret, t0.str("refresh_token"))
		t2 := e.mustRefresh(t, id, secret, t0.str("refresh_token"))
		e.wantInvalidGrant(t, "the previous token a second time", id, secret, t0.str("refresh_token"))
		e.wantInvalidGrant(t, "the chain after it", id, secret, t2.str("refresh_token"))
		e.wantRevokedAccess(t, "its access token", id, secret, t2.str("access_token"))
	})
	t.Run("one live chain: the token that was current dies", func(t *testing.T) {
		t0 := e.grantTokens(t, id, secret, "PROFILE_READ")
		t1 := e.mustRefresh(t, id, secret, t0.str("refresh_token")) // a thief got t0 and uses it now
		t2 := e.mustRefresh(t, id, secret, t0.str("refresh_token"))
		// t1 is a genuine token of the family, no longer current: the
		// whole family goes, the grace chain with it.
		e.wantInvalidGrant(t, "the token that was current", id, secret, t1.str("refresh_token"))
		e.wantInvalidGrant(t, "the grace chain", id, secret, t2.str("refresh_token"))
	})
	t.Run("not the token before the previous one", func(t *testing.T) {
		t0 := e.grantTokens(t, id, secret, "PROFILE_READ")
		t1 := e.mustRefresh(t, id, secret, t0.str("refresh_token"))
		t2 := e.mustRefresh(t, id, secret, t1.str("refresh_token"))
		e.wantInvalidGrant(t, "two rotations back", id, secret, t0.str("refresh_token"))
		e.wantInvalidGrant(t, "the chain after it", id, secret, t2.str("refresh_token"))
	})
	if got := e.metric(t, "oauthd_refresh_reuse_grace_total"); got != 3 {
		t.Errorf("oauthd_refresh_reuse_grace_total = %v; want 3", got)
	}
	if lines := logs.grep("audit", "refresh_token_grace"); len(lines) != 3 {
		t.Errorf("audit records of grace rotations = %d; want 3", len(lines))
	}

	t.Run("grace off", func(t *testing.T) {
		off, _ := startE2EWith(t, "--refresh-reuse-grace", "0")
		oid, osecret := off.client(t, e2eRedirect, []string{"PROFILE_READ"})
		t0 := off.grantTokens(t, oid, osecret, "PROFILE_READ")
		t1 := off.mustRefresh(t, oid, osecret, t0.str("refresh_token"))
		off.wantInvalidGrant(t, "the previous token without a grace", oid, osecret, t0.str("refresh_token"))
		off.wantInvalidGrant(t, "the current token after it", oid, osecret, t1.str("refresh_token"))
		off.wantRevokedAccess(t, "its access token", oid, osecret, t1.str("access_token"))
	})
}

// TestReuseGraceFlag: serve refuses a negative or too long grace, from the
// flag or the environment.
func TestReuseGraceFlag(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	for _, v := range []string{"-1s", "6m"} {
		out, err := runServeOnce(t, db, "--refresh-reuse-grace", v)
		if err == nil || !strings.Contains(out, "--refresh-reuse-grace") {
			t.Errorf("serve --refresh-reuse-grace %s: %v, %q; want a refusal naming the flag", v, err, out)
		}
	}
}
