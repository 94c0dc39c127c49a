package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"oauthd/consent/consenttest"
)

// TestOpenIDClient is the interop test with openid-client (npm, an
// OpenID Certified relying party library; version pinned by
// testdata/openid-client/package-lock.json) against the real binary:
// discovery, code + PKCE +
// nonce, the ID token validated by the library (signature, iss, aud, azp,
// exp, iat, nonce; at_hash it leaves to TestOIDCGoOIDC), userinfo with the expected subject, refresh,
// prompt=none with and without a session, max_age (the library checks
// auth_time against it), and RP-initiated logout from the library's end
// session URL. The Go side is the user's browser.
func TestOpenIDClient(t *testing.T) {
	dir := npmClientDir(t, "openid-client")
	e := startE2E(t)
	const logoutURI = "http://127.0.0.1:9/logged-out"
	id, secret := e.client(t, e2eRedirect, []string{"openid", "profile", "email", "PROFILE_READ"})
	e.cli(t, "clients", "post-logout-uris", "set", id, logoutURI)

	ctx := t.Context()
	node := startNode(t, dir, "openid-client", "ISSUER="+e.base, "CLIENT_ID="+id, "CLIENT_SECRET="+secret,
		"REDIRECT_URI="+e2eRedirect, "LOGOUT_URI="+logoutURI)
	in, sc := node.in, node.out
	reply := func(cb string) {
		line, _ := json.Marshal(map[string]string{"callback": cb})
		fmt.Fprintf(in, "%s\n", line)
	}

	b := consenttest.New() // the user's browser
	var firstAuthTime float64
	for {
		var msg struct {
			Step string `json:"step"`
			Name string `json:"name"`
			URL  string `json:"url"`
		}
		if !sc.Scan() {
			t.Fatalf("openid-client ended early: %v", sc.Err())
		}
		raw := append([]byte(nil), sc.Bytes()...)
		if err := json.Unmarshal(raw, &msg); err != nil {
			t.Fatalf("openid-client said %q: %v", raw, err)
		}
		switch msg.Step {
		case "authorize":
			browser := b
			switch msg.Name {
			case "fresh-browser":
				browser = consenttest.New()
			case "max-age":
				time.Sleep(1100 * time.Millisecond) // the login is now older than max_age=1
			}
			got, err := browser.Authorize(ctx, msg.URL, e2eEmail, e2ePassword, true)
			if err != nil {
				t.Fatalf("%s: authorize: %v", msg.Name, err)
			}
			if msg.Name == "silent" && got.Query().Get("code") == "" {
				t.Fatalf("prompt=none with a session: %s; want a code", got)
			}
			reply(got.String())
			continue
		case "logout":
			resp, err := b.Client.Get(msg.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != logoutURI+"?state=bye" {
				t.Fatalf("end session = %d %q; want 303 to %s?state=bye", resp.StatusCode, resp.Header.Get("Location"), logoutURI)
			}
			reply(resp.Header.Get("Location"))
			continue
		case "done":
		default:
			t.Fatalf("openid-client said %s", raw)
		}
		var done struct {
			Claims          map[string]any `json:"claims"`
			NonceMatched    bool           `json:"nonceMatched"`
			Userinfo        map[string]any `json:"userinfo"`
			RefreshedClaims map[string]any `json:"refreshedClaims"`
			Silent          map[string]any `json:"silent"`
			NoSession       string         `json:"noSession"`
			MaxAge          map[string]any `json:"maxAge"`
		}
		if err := json.Unmarshal(raw, &done); err != nil {
			t.Fatal(err)
		}
		sub := strconv.FormatInt(e.userID, 10)
		c := done.Claims
		if c["iss"] != e.base || c["sub"] != sub || c["aud"] != id || c["azp"] != id || !done.NonceMatched ||
			c["name"] != e2eName || c["preferred_username"] != e2eUsername || c["email"] != e2eEmail || c["email_verified"] != false {
			t.Fatalf("ID token claims %v", c)
		}
		firstAuthTime, _ = c["auth_time"].(float64)
		if u := done.Userinfo; u["sub"] != sub || u["email"] != e2eEmail || u["zoneinfo"] != e2eTimeZone {
			t.Fatalf("userinfo %v", u)
		}
		if r := done.RefreshedClaims; r["sub"] != sub || r["auth_time"] != c["auth_time"] || r["nonce"] != nil {
			t.Fatalf("refreshed ID token %v; want the same sub and auth_time, no nonce", r)
		}
		if done.Silent["sub"] != sub {
			t.Fatalf("prompt=none ID token %v", done.Silent)
		}
		if done.NoSession != "login_required" {
			t.Fatalf("prompt=none without a session: %q; want login_required", done.NoSession)
		}
		if at, _ := done.MaxAge["auth_time"].(float64); at <= firstAuthTime {
			t.Fatalf("auth_time after max_age = %v; want later than %v", at, firstAuthTime)
		}
		break
	}
	// The logout ended the session: prompt=none is login_required again.
	got, err := b.Authorize(ctx, e.base+"/auth/oauth2/authorize?response_type=code&scope=openid&prompt=none&state=s&nonce=n&client_id="+id+
		"&redirect_uri="+e2eRedirect, "", "", true)
	if err != nil || got.Query().Get("error") != "login_required" {
		t.Fatalf("after the logout: %v %v; want login_required", got, err)
	}
}
