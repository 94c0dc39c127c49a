package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
)

// Defects found by trying the issue "Decisions that hold" as an attacker
// would, each through the real binary over HTTP.

// TestRevokeReachesGracePreviousToken: within the reuse grace the previous
// refresh token still refreshes (a lost response), so it is a live token:
// a client that revokes it (RFC 7009, answered 200) must revoke the grant,
// not leave a token that refreshes after its revocation.
func TestRevokeReachesGracePreviousToken(t *testing.T) {
	e := startE2E(t) // the default grace (30s)
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
	t0 := e.grantTokens(t, id, secret, "PROFILE_READ")
	t1 := e.mustRefresh(t, id, secret, t0.str("refresh_token")) // its response is lost
	if status, body := e.revoke(t, id, secret, t0.str("refresh_token"), "refresh_token"); status != http.StatusOK {
		t.Fatalf("revoke = %d %s", status, body)
	}
	e.wantInvalidGrant(t, "the revoked previous token", id, secret, t0.str("refresh_token"))
	e.wantInvalidGrant(t, "the current token of the revoked grant", id, secret, t1.str("refresh_token"))
	e.wantRevokedAccess(t, "an access token of the revoked grant", id, secret, t1.str("access_token"))
}

// TestIntrospectRefreshTokenNarrowed: introspection describes a refresh
// token as the token endpoint will treat it: once the client lost a scope,
// the scope it reports is the narrowed one, and a grant left with none is
// inactive (its next refresh revokes it).
func TestIntrospectRefreshTokenNarrowed(t *testing.T) {
	e := startE2E(t)
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ", "SCHEDULE_READ"})
	tok := e.grantTokens(t, id, secret, "PROFILE_READ", "SCHEDULE_READ")
	rt := tok.str("refresh_token")
	if got := e.introspect(t, id, secret, rt); got["active"] != true || got["scope"] != "PROFILE_READ SCHEDULE_READ" {
		t.Fatalf("introspection before narrowing = %v", got)
	}
	e.cli(t, "clients", "scopes", "set", id, "PROFILE_READ")
	if got := e.introspect(t, id, secret, rt); got["active"] != true || got["scope"] != "PROFILE_READ" {
		t.Errorf("introspection after the client lost SCHEDULE_READ = %v; want active with scope PROFILE_READ", got)
	}
	e.cli(t, "clients", "scopes", "set", id, "BOOKING_READ")
	if got := e.introspect(t, id, secret, rt); got["active"] != false {
		t.Errorf("introspection once the client has none of the grant's scopes = %v; want inactive", got)
	}
	e.wantInvalidGrant(t, "refresh of a grant left with no scope", id, secret, rt)
}

// TestCLIRejectRevision: `clients reject --revision` reaches the running
// server's admin socket and refuses a revision that is not the client's,
// leaving the client and its grants alone.
func TestCLIRejectRevision(t *testing.T) {
	e := startE2E(t)
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
	tok := e.grantTokens(t, id, secret, "PROFILE_READ")
	_, stderr, err := oauthd(t, e.db, "", "clients", "reject", id, "--revision", "000000000000", "--reason", "retry")
	if err == nil || !strings.Contains(stderr, "changed since revision 000000000000") {
		t.Fatalf("reject with a stale revision: %v %q; want a refusal", err, stderr)
	}
	e.wantLiveAccess(t, "after the refused rejection", id, secret, tok.str("access_token"))
	var v struct {
		Revision string `json:"revision"`
		Status   string `json:"status"`
	}
	oneJSON(t, e.cli(t, "clients", "show", id, "--json"), &v)
	if v.Status != "approved" {
		t.Fatalf("status after the refused rejection = %s", v.Status)
	}
	oneJSON(t, e.cli(t, "clients", "reject", id, "--revision", v.Revision, "--reason", "abuse", "--json"), &v)
	if v.Status != "rejected" {
		t.Fatalf("reject with the current revision: status %s", v.Status)
	}
	e.wantRevokedAccess(t, "after the rejection", id, "", tok.str("access_token"))
}

// TestIntrospectionNeedsClientAuthentication: the metadata lists no "none"
// for introspection (RFC 7662 §2.1 requires authorization there), so a
// public client's client_id alone is refused: otherwise anyone who knows a
// public client's ID could check, without tripping reuse detection,
// whether a stolen refresh token is still current.
func TestIntrospectionNeedsClientAuthentication(t *testing.T) {
	e := startE2E(t)
	pub, _ := e.client(t, e2eRedirect, []string{"PROFILE_READ"}, "--public")
	var md struct {
		Introspection []string `json:"introspection_endpoint_auth_methods_supported"`
	}
	_, body := e2eGet(t, e.base+"/.well-known/oauth-authorization-server", "", nil)
	if err := json.Unmarshal([]byte(body), &md); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(md.Introspection, "none") {
		t.Fatalf("introspection_endpoint_auth_methods_supported = %v; this test expects none absent", md.Introspection)
	}
	r := e2ePost(t, e.introspectURL(), url.Values{"token": {"oauthd_rt_x"}, "client_id": {pub}}, "", "")
	if r.Status != http.StatusUnauthorized || r.Body["error"] != "invalid_client" {
		t.Fatalf("introspection by a public client with client_id alone = %d %v; want 401 invalid_client", r.Status, r.Body)
	}
}

// TestNarrowingReachesCodes: a scope the operator takes from a client
// between the user's consent and the code exchange does not reach the
// tokens: the exchange issues the scopes the client still has, and a code
// left with none is refused (invalid_grant).
func TestNarrowingReachesCodes(t *testing.T) {
	e := startE2E(t)
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ", "BOOKING_READ"})
	conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ", "BOOKING_READ")
	code := e.codeFlow(t, context.Background(), consenttest.New(), conf)
	e.cli(t, "clients", "scopes", "set", id, "PROFILE_READ")
	tok := e.exchangeCode(t, id, secret, code)
	if tok.Status != http.StatusOK || tok.str("scope") != "PROFILE_READ" {
		t.Fatalf("exchange after the client lost BOOKING_READ = %d %v; want 200 with scope PROFILE_READ", tok.Status, tok.Body)
	}
	claims, _ := e.verifyJWT(t, context.Background(), tok.str("access_token"))
	if claims["scope"] != "PROFILE_READ" {
		t.Errorf("access token scope = %v; want PROFILE_READ", claims["scope"])
	}
	if got := e.introspect(t, id, secret, tok.str("refresh_token")); got["scope"] != "PROFILE_READ" {
		t.Errorf("the grant's scope = %v; want PROFILE_READ", got["scope"])
	}

	conf = e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
	code = e.codeFlow(t, context.Background(), consenttest.New(), conf)
	e.cli(t, "clients", "scopes", "set", id, "BOOKING_READ")
	if r := e.exchangeCode(t, id, secret, code); r.Status != http.StatusBadRequest || r.Body["error"] != "invalid_grant" {
		t.Fatalf("exchange of a code left with no scope = %d %v; want 400 invalid_grant", r.Status, r.Body)
	}
}

// TestMeRevokedBeforeScope: /v2/me refuses a token of a revoked grant with
// 401 invalid_token (RFC 6750 §3.1: the token is revoked), whatever its
// scopes; before, a revoked token without PROFILE_READ got 403
// insufficient_scope, telling the client to ask for more scope.
func TestMeRevokedBeforeScope(t *testing.T) {
	e := startE2E(t)
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ", "SCHEDULE_READ"})
	tok := e.grantTokens(t, id, secret, "SCHEDULE_READ")
	if status, body := e.me(t, tok.str("access_token")); status != http.StatusForbidden {
		t.Fatalf("/v2/me without PROFILE_READ = %d %s; want 403", status, body)
	}
	if status, body := e.revoke(t, id, secret, tok.str("refresh_token"), ""); status != http.StatusOK {
		t.Fatalf("revoke = %d %s", status, body)
	}
	if status, body := e.me(t, tok.str("access_token")); status != http.StatusUnauthorized || !strings.Contains(body, `"invalid_token"`) {
		t.Fatalf("/v2/me with a revoked token without PROFILE_READ = %d %s; want 401 invalid_token", status, body)
	}
	e.wantRevokedAccess(t, "revoked token", id, secret, tok.str("access_token"))
}
