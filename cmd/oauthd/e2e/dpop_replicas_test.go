package e2e

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"oauthd/keys/verify/dpoptest"
)

// TestDPoPReplayAcrossReplicas: the jti of a DPoP proof is recorded in
// PostgreSQL, so a proof used on one replica is refused on another, at
// the token endpoint (before the grant is used: it stays live) and at
// /v2/me.
func TestDPoPReplayAcrossReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two servers")
	}
	ctx := context.Background()
	rs := startReplicas(t, 2)
	var u struct{ ID int64 }
	oneJSON(t, mustOauthd(t, rs.db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--time-zone", e2eTimeZone, "--password-stdin", "--json"), &u)
	front, direct := rs.e2es(u.ID)
	id, secret := front.client(t, e2eRedirect, []string{"PROFILE_READ"})
	k := dpoptest.NewES256()

	// The public URL (--base-url) is what the proofs name, whichever
	// replica serves them.
	tokenURL := front.base + "/v2/auth/oauth2/token"
	refresh := func(d *e2e, rt, proof string) e2eTokenResponse {
		return e2ePostHeader(t, d.base+"/v2/auth/oauth2/token",
			url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {id}, "client_secret": {secret}},
			http.Header{"DPoP": {proof}})
	}
	proof := k.Proof("POST", tokenURL, "")
	r := refresh(direct[0], freshGrant(t, ctx, front, id, secret), proof)
	if r.Status != http.StatusOK || r.str("token_type") != "DPoP" {
		t.Fatalf("refresh with a proof on replica 0 = %d %v", r.Status, r.Body)
	}
	if r2 := refresh(direct[1], r.str("refresh_token"), proof); r2.Status != http.StatusBadRequest || r2.str("error") != "invalid_dpop_proof" ||
		!strings.Contains(r2.str("error_description"), "replayed") {
		t.Fatalf("the same proof on replica 1 = %d %v; want 400 invalid_dpop_proof (replayed)", r2.Status, r2.Body)
	}
	at := r.str("access_token")
	meProof := k.Proof("GET", front.base+"/v2/me", at)
	if res := dpopGet(t, direct[1].base+"/v2/me", at, meProof); res.StatusCode != http.StatusOK {
		t.Fatalf("/v2/me with the proof on replica 1 = %d", res.StatusCode)
	}
	if res := dpopGet(t, direct[0].base+"/v2/me", at, meProof); res.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(res.Header.Get("WWW-Authenticate"), `error="invalid_dpop_proof"`) {
		t.Fatalf("/v2/me replayed on replica 0 = %d %v", res.StatusCode, res.Header)
	}
}
