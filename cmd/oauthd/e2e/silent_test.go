package e2e

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
)

// Silent approvals (prompt=none) through the real server: they follow
// every decision the grants follow (docs/SECURITY.md, "The remembered
// consent").

// silentAuthorize sends a prompt=none authorization request for scopes
// from the signed-in browser b and returns the code, or the error the
// client is told (b must land on the redirect URI without any page).
func (e *e2e) silentAuthorize(t *testing.T, b *consenttest.Browser, conf *oauth2.Config, verifier string, extra ...oauth2.AuthCodeOption) (code, errCode string) {
	t.Helper()
	opts := append([]oauth2.AuthCodeOption{oauth2.SetAuthURLParam("prompt", "none"), oauth2.S256ChallengeOption(verifier)}, extra...)
	got, err := b.Authorize(context.Background(), conf.AuthCodeURL("st", opts...), e2eEmail, e2ePassword, false)
	if err != nil {
		t.Fatalf("prompt=none: %v (it must never show a page)", err)
	}
	if !strings.HasPrefix(got.String(), conf.RedirectURL+"?") {
		t.Fatalf("prompt=none redirected to %s", got)
	}
	return got.Query().Get("code"), got.Query().Get("error")
}

// withScopes is conf asking for scopes.
func withScopes(conf *oauth2.Config, scopes ...string) *oauth2.Config {
	c := *conf
	c.Scopes = scopes
	return &c
}

// TestSilentApprovalFollowsDecisionsE2E replays the two findings
// step by step with prompt=none: a scope the operator took from the client
// and gave back, and a client rejected and approved again, each end in
// consent_required; what still holds is approved, and a new consent on the
// page makes it work again.
func TestSilentApprovalFollowsDecisionsE2E(t *testing.T) {
	e := startE2E(t)
	ctx := context.Background()
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ", "BOOKING_READ"})
	both := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ", "BOOKING_READ")
	profile, booking := withScopes(both, "PROFILE_READ"), withScopes(both, "BOOKING_READ")
	br := consenttest.New()
	e.codeFlow(t, ctx, br, both, oauth2.S256ChallengeOption(oauth2.GenerateVerifier())) // the consent page's Allow

	exchangeOK := func(step string, conf *oauth2.Config, code, v string) {
		t.Helper()
		if code == "" {
			t.Fatalf("%s: no code", step)
		}
		if _, err := conf.Exchange(ctx, code, oauth2.VerifierOption(v)); err != nil {
			t.Fatalf("%s: exchange: %v", step, err)
		}
	}
	want := func(step string, conf *oauth2.Config, wantErr string) {
		t.Helper()
		v := oauth2.GenerateVerifier()
		code, errCode := e.silentAuthorize(t, br, conf, v)
		if errCode != wantErr {
			t.Fatalf("%s: prompt=none gave error %q (code %t); want %q", step, errCode, code != "", wantErr)
		}
		if wantErr == "" {
			exchangeOK(step, conf, code, v)
		}
		t.Logf("%s: prompt=none for %v → %s", step, conf.Scopes, map[bool]string{true: "code (exchanged: 200)", false: wantErr}[wantErr == ""])
	}
	want("after the consent", both, "")

	// The narrowing, and the scope given back.
	e.cli(t, "clients", "scopes", "set", id, "PROFILE_READ")
	want("BOOKING_READ taken from the client", profile, "")
	e.cli(t, "clients", "scopes", "set", id, "PROFILE_READ", "BOOKING_READ")
	want("BOOKING_READ given back", booking, "consent_required")
	want("BOOKING_READ given back, both asked", both, "consent_required")
	want("BOOKING_READ given back, the scope that stayed", profile, "")
	e.codeFlow(t, ctx, br, both, oauth2.S256ChallengeOption(oauth2.GenerateVerifier())) // consents again
	want("after consenting again", both, "")

	// The rejection, and the approval after it.
	e.cli(t, "clients", "reject", id, "--reason", "abuse")
	e.cli(t, "clients", "approve", id)
	want("rejected and approved again", profile, "consent_required")
	want("rejected and approved again, both", both, "consent_required")
	var listed []struct {
		ClientID string `json:"client_id"`
	}
	oneJSON(t, e.cli(t, "users", "apps", e2eEmail, "--json"), &listed)
	if len(listed) != 0 {
		t.Fatalf("users apps after reject and approve = %+v; want none (the consent is from before the rejection)", listed)
	}
	e.codeFlow(t, ctx, br, profile, oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	want("after a new consent to PROFILE_READ", profile, "")
	want("BOOKING_READ, consented only before the rejection", booking, "consent_required")

	// A disabled user's consent is gone with them.
	e.cli(t, "users", "disable", e2eEmail)
	e.cli(t, "users", "enable", e2eEmail)
	br = consenttest.New()
	e.codeFlow(t, ctx, br, withScopes(both, "BOOKING_READ"), oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	want("disabled and enabled again, then a consent to BOOKING_READ only", profile, "consent_required")
}

// TestRaceSilentApprovalRemoveApp: a silent approval and "Remove access"
// (the page's button, or `users apps revoke`) started together, each
// first in turn, many rounds: whichever commits first, no code, consent or
// grant of the approval survives the removal.
func TestRaceSilentApprovalRemoveApp(t *testing.T) {
	raceSilentRemove(t, startE2E(t), 16)
}

// TestRaceSilentApprovalRemoveAppReplicas: the same race on PostgreSQL
// across replicas: the silent approvals on one replica, the page's
// removals on another, the CLI's on the database.
func TestRaceSilentApprovalRemoveAppReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two servers on PostgreSQL")
	}
	rs := startReplicas(t, 2)
	var u struct{ ID int64 }
	oneJSON(t, mustOauthd(t, rs.db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--time-zone", e2eTimeZone, "--password-stdin", "--json"), &u)
	front, _ := rs.e2es(u.ID)
	rs.proxy.mu.Lock()
	rs.proxy.pin = func(r *http.Request) int {
		switch {
		case r.URL.Path == "/auth/oauth2/authorize":
			return 0
		case strings.HasPrefix(r.URL.Path, "/settings/apps/"):
			return 1
		}
		return -1
	}
	rs.proxy.mu.Unlock()
	raceSilentRemove(t, front, 16)
	rs.proxy.mu.Lock()
	served := strings.Join(rs.proxy.served, "\n")
	rs.proxy.mu.Unlock()
	for _, want := range []string{"GET /auth/oauth2/authorize → 0", "/revoke → 1"} {
		if !strings.Contains(served, want) {
			t.Fatalf("the race did not go %q", want)
		}
	}
}

// raceSilentRemove runs the race of TestRaceSilentApprovalRemoveApp for
// rounds rounds on e.
func raceSilentRemove(t *testing.T, e *e2e, rounds int) {
	ctx := context.Background()
	id, secret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
	conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
	br := consenttest.New()
	page := signInToApps(t, e.base)
	outcomes := map[string]int{}
	for round := range rounds {
		e.codeFlow(t, ctx, br, conf, oauth2.S256ChallengeOption(oauth2.GenerateVerifier())) // consent (again)
		_, appsPage := page.do(http.MethodGet, "/settings/apps", nil)
		csrf := consenttest.FormCSRF(t, appsPage)
		v := oauth2.GenerateVerifier()
		var code, errCode string
		var wg sync.WaitGroup
		silent := func() {
			defer wg.Done()
			got, err := br.Authorize(ctx, conf.AuthCodeURL("st", oauth2.SetAuthURLParam("prompt", "none"), oauth2.S256ChallengeOption(v)), "", "", false)
			if err == nil {
				code, errCode = got.Query().Get("code"), got.Query().Get("error")
			} else {
				errCode = err.Error()
			}
		}
		remove := func() {
			defer wg.Done()
			if round%4 >= 2 {
				_, _, _ = oauthd(t, e.db, "", "users", "apps", "revoke", e2eEmail, id)
				return
			}
			req, _ := http.NewRequest(http.MethodPost, e.base+"/settings/apps/"+id+"/revoke", strings.NewReader(url.Values{"csrf_token": {csrf}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", e.base)
			if resp, err := page.c.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		wg.Add(2)
		if round%2 == 0 {
			go silent()
			go remove()
		} else {
			go remove()
			go silent()
		}
		wg.Wait()
		switch {
		case code != "":
			outcomes["approval first"]++
			// Its code was issued before the removal, which deleted it.
			if _, err := conf.Exchange(ctx, code, oauth2.VerifierOption(v)); err == nil || !strings.Contains(err.Error(), "invalid_grant") {
				t.Fatalf("round %d: the silent approval's code survived the removal: exchange = %v", round, err)
			}
		case errCode == "consent_required":
			outcomes["removal first"]++
		default:
			t.Fatalf("round %d: prompt=none = %q", round, errCode)
		}
		var listed []struct {
			ClientID string `json:"client_id"`
		}
		oneJSON(t, e.cli(t, "users", "apps", e2eEmail, "--json"), &listed)
		if len(listed) != 0 {
			t.Fatalf("round %d: users apps after the removal = %+v; want none (no consent or grant left)", round, listed)
		}
		if c, ec := e.silentAuthorize(t, br, conf, oauth2.GenerateVerifier()); ec != "consent_required" {
			t.Fatalf("round %d: prompt=none after the removal = code %t, %q; want consent_required", round, c != "", ec)
		}
	}
	t.Logf("outcomes over %d rounds: %v", rounds, outcomes)
}

// TestPromptNoneFloodBounded: one signed-in user floods prompt=none (each
// request with a fresh nonce, which is stored) from 8 connections. The
// approvals past the user's budget are refused with temporarily_unavailable
// and store nothing: the codes and nonces stored stay within the bound of
// docs/LIMITS.md, and the bbolt file's size with them. The user's other app
// is not refused.
func TestPromptNoneFloodBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the server twice")
	}
	e := startE2E(t)
	ctx := context.Background()
	id, secret := e.client(t, e2eRedirect, []string{"openid", "PROFILE_READ"})
	conf := e.config(id, secret, e2eRedirect, oauth2.AuthStyleInParams, "openid", "PROFILE_READ")
	other, otherSecret := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
	otherConf := e.config(other, otherSecret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
	br := consenttest.New()
	e.codeFlow(t, ctx, br, conf, oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oauth2.SetAuthURLParam("nonce", "n0"))
	e.codeFlow(t, ctx, br, otherConf, oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
	stopServe(t, e.server)
	size0, recs0 := fileSize(t, e.db), boltRecords(t, e.db)

	s := startServe(t, e.db)
	conf.Endpoint.AuthURL = s.base + "/auth/oauth2/authorize"
	otherConf.Endpoint.AuthURL = conf.Endpoint.AuthURL
	const n, workers = 600, 8
	var mu sync.Mutex
	got := map[string]int{}
	start := time.Now()
	together(workers, func(w int) {
		for i := w; i < n; i += workers {
			u := conf.AuthCodeURL("st", oauth2.SetAuthURLParam("prompt", "none"), oauth2.S256ChallengeOption(oauth2.GenerateVerifier()),
				oauth2.SetAuthURLParam("nonce", "flood-"+strconv.Itoa(i)))
			res, err := br.Authorize(ctx, u, "", "", false)
			k := "transport error"
			switch {
			case err != nil:
			case res.Query().Get("code") != "":
				k = "code"
			default:
				k = res.Query().Get("error")
			}
			mu.Lock()
			got[k]++
			mu.Unlock()
		}
	})
	elapsed := time.Since(start)
	t.Logf("%d prompt=none requests by one user in %s: %v", n, elapsed.Round(time.Millisecond), got)
	// The bound: the pair's budget (60 at once, then one a second), plus
	// the requests in flight when it ran out (a limit counted on success
	// may overshoot by those).
	bound := 60 + int(elapsed/time.Second) + 1 + workers
	if got["code"] > bound || got["code"] == 0 || got["temporarily_unavailable"] < n-bound || got["transport error"] > 0 {
		t.Fatalf("flood outcomes %v; want at most %d codes and the rest temporarily_unavailable", got, bound)
	}
	// The user's other app is not refused.
	if code, ec := e.silentAuthorize(t, br, otherConf, oauth2.GenerateVerifier()); code == "" {
		t.Fatalf("prompt=none for the user's other app after the flood: %q; want a code", ec)
	}
	stopServe(t, s)
	size1, recs1 := fileSize(t, e.db), boltRecords(t, e.db)
	t.Logf("bbolt file %d → %d bytes; codes %d → %d, nonces %d → %d, grants %d → %d", size0, size1,
		recs0["auth_codes"], recs1["auth_codes"], recs0["nonces"], recs1["nonces"], recs0["grants"], recs1["grants"])
	if d := recs1["auth_codes"] - recs0["auth_codes"]; d > bound+1 {
		t.Errorf("the flood stored %d codes; want at most %d", d, bound+1)
	}
	if d := recs1["nonces"] - recs0["nonces"]; d > bound {
		t.Errorf("the flood stored %d nonces; want at most %d", d, bound)
	}
	if recs1["grants"] != recs0["grants"] {
		t.Errorf("the flood changed the number of consents: %d → %d", recs0["grants"], recs1["grants"])
	}
	if size1-size0 > 256<<10 {
		t.Errorf("the bbolt file grew by %d bytes; want at most 256 KiB", size1-size0)
	}
}
