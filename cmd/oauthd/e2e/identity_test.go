package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
	"oauthd/data/password"
)

// This file checks issue 22 ("Identity that cannot be borrowed") through
// the real server over HTTP: a client belongs to its owner's ID, emails
// and usernames are one identifier under the canonical form (data/ident),
// and the login handover moves nothing by email.

// handoverLogin signs jar's browser in through the platform as sub with
// email (the stand-in platform signs whatever it is told) and returns the
// handover's answer: the settings pages (200) or the refusal page.
func (h *handoverServer) handoverLogin(t *testing.T, jar http.CookieJar, sub, email string) (int, string) {
	t.Helper()
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(h.base + "/auth/login?return_to=%2Fsettings%2Fclients")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), h.p.URL+"/login?") {
		t.Fatalf("GET /auth/login = %d to %q; want the platform's login page", resp.StatusCode, resp.Header.Get("Location"))
	}
	claims := h.p.claims(loc.Query().Get("challenge"))
	claims["sub"], claims["email"], claims["name"] = sub, email, "Platform "+sub
	status, _, body := browse(t, jar, http.MethodGet, h.base+"/auth/login/handover?assertion="+url.QueryEscape(h.p.sign(claims)), nil)
	return status, body
}

// TestLookAlikeIsTheSameUser replays the first takeover of issue 22:
// ſam@… (U+017F, which folds to s) was a second user beside sam@… and,
// with ownership by case-insensitive email, owned Sam's clients. Every
// way in for a look-alike of a user's email or username is now refused:
// users add, users import (naming the row), and the login handover (409,
// for every spelling); no user is made, and Sam keeps his client.
func TestLookAlikeIsTheSameUser(t *testing.T) {
	h := startHandover(t) // a local user ann@example.com (ann) who owns a client
	id, _ := h.client(t, e2eRedirect, []string{"PROFILE_READ"})
	users := func() int {
		var us []json.RawMessage
		oneJSON(t, h.cli(t, "users", "list", "--json"), &us)
		return len(us)
	}
	before := users()

	lookAlikes := []string{"ANN@example.com", "\uff41\uff4e\uff4e@example.com", "ann@EXAMPLE.com", "ann@\uff45xample.com", "Ann@Example.COM"}
	t.Run("users add", func(t *testing.T) {
		for _, email := range lookAlikes {
			_, errOut, err := oauthd(t, h.db, e2ePassword+"\n", "users", "add", "--email", email, "--username", "mallory", "--name", "M", "--password-stdin")
			if err == nil || !strings.Contains(errOut, "already exists") {
				t.Errorf("users add --email %q: %v %s; want refused: already exists", email, err, errOut)
			}
		}
		for _, name := range []string{"ANN", "\uff41\uff4e\uff4e", "\uff21nn"} {
			_, errOut, err := oauthd(t, h.db, e2ePassword+"\n", "users", "add", "--email", "m@example.com", "--username", name, "--name", "M", "--password-stdin")
			if err == nil || !strings.Contains(errOut, "already exists") {
				t.Errorf("users add --username %q: %v %s; want refused: already exists", name, err, errOut)
			}
		}
		// Invisible and control characters are refused outright.
		for _, email := range []string{"an\u200bn@example.com", "\u202eann@example.com", "ann\u2066@example.com", "an\x7fn@example.com"} {
			_, errOut, err := oauthd(t, h.db, e2ePassword+"\n", "users", "add", "--email", email, "--username", "x", "--name", "M", "--password-stdin")
			if err == nil || !strings.Contains(errOut, "character") && !strings.Contains(errOut, "not an email address") {
				t.Errorf("users add --email %q: %v %s; want refused", email, err, errOut)
			}
		}
		_, errOut, err := oauthd(t, h.db, e2ePassword+"\n", "users", "add", "--email", "m@example.com", "--username", "\u017fam", "--name", "M", "--password-stdin")
		if err == nil || !strings.Contains(errOut, "not a valid username") {
			t.Errorf("users add --username ſam: %v %s; want refused: not a valid username", err, errOut)
		}
	})

	t.Run("users import names the row", func(t *testing.T) {
		hash, err := password.Hash("correct horse battery staple")
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "users.jsonl")
		rows := `{"email":"fresh@example.com","name":"Fresh","password_hash":"` + hash + `"}` + "\n" +
			`{"email":"\u017fam@plat.test","name":"Long S","password_hash":"` + hash + `"}` + "\n" +
			`{"email":"sam@plat.test","name":"Sam","password_hash":"` + hash + `"}` + "\n" +
			`{"email":"ANN@\uff45xample.com","name":"Not Ann","password_hash":"` + hash + `"}` + "\n"
		if err := os.WriteFile(file, []byte(rows), 0o600); err != nil {
			t.Fatal(err)
		}
		_, errOut, err := oauthd(t, h.db, "", "users", "import", file)
		if err == nil {
			t.Fatal("an import with look-alikes succeeded")
		}
		for _, want := range []string{"line 3: sam@plat.test is also on line 2", "line 4: a user with the login ANN@ｅxample.com already exists", "nothing was imported"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("import error lacks %q:\n%s", want, errOut)
			}
		}
		if users() != before {
			t.Errorf("the refused import made users")
		}
	})

	t.Run("handover", func(t *testing.T) {
		for i, email := range lookAlikes {
			jar := newJar(t)
			status, body := h.handoverLogin(t, jar, "mallory-"+string(rune('a'+i)), email)
			if status != http.StatusConflict || !strings.Contains(body, "already exists") {
				t.Errorf("handover of another sub with %q: %d; want 409\n%s", email, status, body)
			}
			if _, at, _ := browse(t, jar, http.MethodGet, h.base+"/settings/clients/"+id, nil); !strings.HasPrefix(at.String(), h.p.URL+"/login") {
				t.Errorf("after the refused handover with %q, the browser reached %s; want the platform's login (no session)", email, at)
			}
		}
		status, body := h.handoverLogin(t, newJar(t), "mallory-bidi", "\u202emoc.elpmaxe@nna")
		if status != http.StatusBadRequest {
			t.Errorf("handover with a bidi override in the email: %d; want 400\n%s", status, body)
		}
		if users() != before {
			t.Errorf("a refused handover made a user")
		}
	})

	// The owner still has the client.
	var show struct {
		OwnerID int64  `json:"owner_id"`
		Owner   string `json:"owner"`
	}
	oneJSON(t, h.cli(t, "clients", "show", id, "--json"), &show)
	if show.OwnerID != h.userID || show.Owner != e2eEmail {
		t.Errorf("clients show: owner %d %q; want ann (%d)", show.OwnerID, show.Owner, h.userID)
	}
}

// TestSettingsOwnershipByID: on the built-in login, any spelling of a
// login signs in as its one user, who opens their own client and no
// other; another user gets 404 for it, even with their own CSRF token.
func TestSettingsOwnershipByID(t *testing.T) {
	e := startE2E(t) // ann, who owns the clients e.client makes
	id, _ := e.client(t, e2eRedirect, []string{"PROFILE_READ"})
	mustOauthd(t, e.db, e2ePassword+"\n", "users", "add", "--email", "sam@plat.test", "--username", "sam", "--name", "Sam", "--password-stdin")
	for _, login := range []string{"ANN", "\uff41\uff4e\uff4e", "Ann@Example.COM"} {
		if status, _ := consenttest.SignInSettings(t, e.base, nil, login, e2ePassword).Client(t, id); status != http.StatusOK {
			t.Errorf("signed in as %q, ann opens her client: %d; want 200", login, status)
		}
	}
	sam := consenttest.SignInSettings(t, e.base, nil, "sam@plat.test", e2ePassword)
	if status, _ := sam.Client(t, id); status != http.StatusNotFound {
		t.Errorf("sam opens ann's client: %d; want 404", status)
	}
	if status := sam.GenerateSecret(t, id); status != http.StatusNotFound {
		t.Errorf("sam mints a secret for ann's client: %d; want 404", status)
	}
}

// TestHandoverEmailChange replays the second takeover of issue 22: the
// platform renamed b@plat.test to bob.new@plat.test and gave b@plat.test
// to someone else, who then saw Bob's client, and Bob lost it. Now Bob,
// identified by his sub, keeps his client, his grant and his session
// across the change; the newcomer with the old email is a new user who
// owns nothing of Bob's and cannot touch it.
func TestHandoverEmailChange(t *testing.T) {
	h := startHandover(t)
	ctx := context.Background()
	bob := newJar(t)
	if status, body := h.handoverLogin(t, bob, "sub-bob", "b@plat.test"); status != http.StatusOK {
		t.Fatalf("bob's first login: %d\n%s", status, body)
	}
	// The operator gives Bob a client by his email (resolved once, to his ID).
	var created struct {
		ID string `json:"client_id"`
	}
	oneJSON(t, h.cli(t, "clients", "create", "--owner", "b@plat.test", "--name", "Bob App", "--redirect-uri", e2eRedirect,
		"--scope", "PROFILE_READ", "--json"), &created)
	h.cli(t, "clients", "approve", created.ID)
	// Bob allows ann's client (a grant, and its tokens).
	annClient, secret := h.client(t, e2eRedirect, []string{"PROFILE_READ"})
	conf := h.config(annClient, secret, e2eRedirect, oauth2.AuthStyleInParams, "PROFILE_READ")
	b := consenttest.New()
	b.Client.Jar = bob
	verifier := oauth2.GenerateVerifier()
	loc, err := b.Authorize(ctx, conf.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), "", "", true)
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("bob's consent: %v %v", loc, err)
	}
	tok, err := conf.Exchange(ctx, loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	meID := func(at string) (int, int64, string) {
		status, body := h.me(t, at)
		var me struct {
			Data struct {
				ID    int64  `json:"id"`
				Email string `json:"email"`
			} `json:"data"`
		}
		_ = json.Unmarshal([]byte(body), &me)
		return status, me.Data.ID, me.Data.Email
	}
	_, bobID, _ := meID(tok.AccessToken)

	// The platform renames Bob; his next login carries the new email.
	fresh := newJar(t)
	if status, body := h.handoverLogin(t, fresh, "sub-bob", "bob.new@plat.test"); status != http.StatusOK || !strings.Contains(body, created.ID) {
		t.Fatalf("bob after the rename: %d; want his settings with Bob App\n%s", status, body)
	}
	for name, jar := range map[string]http.CookieJar{"the session from before the rename": bob, "the new session": fresh} {
		if status, _, _ := browse(t, jar, http.MethodGet, h.base+"/settings/clients/"+created.ID, nil); status != http.StatusOK {
			t.Errorf("bob's %s opens Bob App: %d; want 200", name, status)
		}
	}
	// His grant and its tokens are his still: the refresh token works and
	// names him, with his new email.
	if r := h.refresh(t, annClient, secret, tok.RefreshToken); r.Status != http.StatusOK {
		t.Errorf("bob's refresh after the rename: %d %v; want 200", r.Status, r.Body)
	} else if status, id, email := meID(r.str("access_token")); status != http.StatusOK || id != bobID || email != "bob.new@plat.test" {
		t.Errorf("/v2/me after the rename = %d, user %d %q; want bob (%d) with bob.new@plat.test", status, id, email, bobID)
	}
	var show struct {
		OwnerID int64  `json:"owner_id"`
		Owner   string `json:"owner"`
	}
	oneJSON(t, h.cli(t, "clients", "show", created.ID, "--json"), &show)
	if show.Owner != "bob.new@plat.test" {
		t.Errorf("clients show: owner %q; want bob's current email bob.new@plat.test", show.Owner)
	}

	// The platform gives b@plat.test to a new identity.
	other := newJar(t)
	status, body := h.handoverLogin(t, other, "sub-newcomer", "B@plat.test")
	if status != http.StatusOK {
		t.Fatalf("the newcomer's login with the freed email: %d\n%s", status, body)
	}
	if strings.Contains(body, created.ID) || strings.Contains(body, "Bob App") {
		t.Errorf("the newcomer's settings list Bob App:\n%s", body)
	}
	if status, _, _ := browse(t, other, http.MethodGet, h.base+"/settings/clients/"+created.ID, nil); status != http.StatusNotFound {
		t.Errorf("the newcomer opens Bob App: %d; want 404", status)
	}
	_, _, list := browse(t, other, http.MethodGet, h.base+"/settings/clients", nil)
	if status, _, _ := browse(t, other, http.MethodPost, h.base+"/settings/clients/"+created.ID+"/secrets",
		url.Values{"csrf_token": {consenttest.FormCSRF(t, list)}}); status != http.StatusNotFound {
		t.Errorf("the newcomer mints a secret for Bob App: %d; want 404", status)
	}
	var secrets []json.RawMessage
	oneJSON(t, h.cli(t, "clients", "secrets", "list", created.ID, "--json"), &secrets)
	if len(secrets) != 1 {
		t.Errorf("Bob App has %d secrets after the newcomer's attempt; want 1", len(secrets))
	}
	// Bob cannot take the email back while the newcomer holds it: 409.
	if status, body := h.handoverLogin(t, newJar(t), "sub-bob", "b@PLAT.test"); status != http.StatusConflict {
		t.Errorf("bob asserting the newcomer's email: %d; want 409\n%s", status, body)
	}
	oneJSON(t, h.cli(t, "clients", "show", created.ID, "--json"), &show)
	if show.Owner != "bob.new@plat.test" {
		t.Errorf("after the refused login, clients show owner %q; want bob.new@plat.test", show.Owner)
	}
}
