package main

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"oauthd/cmd/internal/wiring"
	"oauthd/consent/consenttest"
	"oauthd/data/postgres/pgtest"
	"oauthd/keys/keystest"
)

// This file is the upgrade promise (docs/PRODUCTION.md, "Upgrades and
// rollbacks"): a database written by an earlier release opens in this one
// with every refresh token, live code, session, client and key intact.
// testdata/upgrade holds such a database, made by scripts/upgrade-fixture.sh
// with the release named in its fixture.json: the bbolt file and its
// write-ahead log as a SIGKILL left them (records not yet checkpointed
// included), and the credentials they hold. The test asserts behaviour over
// HTTP, never the stored encodings, so that a change of the record formats
// must keep reading the old ones.

// upgradeFixture is testdata/upgrade/fixture.json (the fields the test
// uses; scripts/upgradefixture writes it).
type upgradeFixture struct {
	Release   string    `json:"release"`
	MadeAt    time.Time `json:"made_at"`
	BaseURL   string    `json:"base_url"`
	MasterKey string    `json:"master_key"`
	Users     []struct {
		ID       int64  `json:"id"`
		Email    string `json:"email"`
		Username string `json:"username"`
		Name     string `json:"name"`
		TimeZone string `json:"time_zone"`
		Password string `json:"password"`
	} `json:"users"`
	Clients []struct {
		Name    string   `json:"name"`
		ID      string   `json:"client_id"`
		Type    string   `json:"client_type"`
		Status  string   `json:"status"`
		Legacy  bool     `json:"legacy"`
		Owner   string   `json:"owner"`    // as the release stored it
		OwnerID *int64   `json:"owner_id"` // 0: must be unclaimed after the upgrade; nil (older fixtures): the user with that exact email
		Scopes  []string `json:"scopes"`
		Secrets []struct {
			ID     string `json:"secret_id"`
			Secret string `json:"client_secret"`
		} `json:"secrets"`
		Redirect []string `json:"redirect_uris"`
	} `json:"clients"`
	Keys     []upgradeKey `json:"keys"`
	JWKSKids []string     `json:"jwks_kids"`
	Refresh  []struct {
		What     string `json:"what"`
		ClientID string `json:"client_id"`
		Secret   string `json:"client_secret"`
		Token    string `json:"refresh_token"`
		Live     bool   `json:"live"`
		Where    string `json:"where"`
	} `json:"refresh_tokens"`
	Access []struct {
		What   string `json:"what"`
		Token  string `json:"access_token"`
		UserID int64  `json:"user_id"`
	} `json:"access_tokens"`
	Codes []struct {
		ClientID string `json:"client_id"`
		Secret   string `json:"client_secret"`
		Code     string `json:"code"`
		Verifier string `json:"code_verifier"`
		Redirect string `json:"redirect_uri"`
		UserID   int64  `json:"user_id"`
		Where    string `json:"where"`
	} `json:"codes"`
	Sessions []struct {
		Cookie string `json:"cookie"`
		Value  string `json:"value"`
		Login  string `json:"login"`
		Where  string `json:"where"`
	} `json:"sessions"`
	WAL struct {
		FirstRecordN int `json:"first_record_payload_bytes"`
	} `json:"wal"`
}

// upgradeKey is a signing key as `keys list --json` shows it.
type upgradeKey struct {
	Kid   string `json:"kid"`
	Alg   string `json:"alg"`
	State string `json:"state"`
}

// upgradeServer is this release's server, wired as `serve` wires it, on a
// copy of the fixture, with a clock that starts at the fixture's made_at:
// codes, sessions and tokens are as young as they were when the release
// was killed.
type upgradeServer struct {
	fx     upgradeFixture
	db, mk string // database path, master key file
	hc     *http.Client
	dial   string // the listener's address
	stop   func()
}

func startUpgrade(t *testing.T, fixture string) *upgradeServer {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixture, "fixture.json"))
	if err != nil {
		t.Fatal(err)
	}
	u := &upgradeServer{}
	if err := json.Unmarshal(raw, &u.fx); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	u.db = filepath.Join(dir, "oauthd.db")
	gunzipTo(t, filepath.Join(fixture, "oauthd.db.gz"), u.db)
	gunzipTo(t, filepath.Join(fixture, "oauthd.db-wal.gz"), u.db+"-wal")
	for i, c := range u.fx.Clients {
		if c.OwnerID == nil { // a fixture made before owners were IDs
			var id int64
			for _, usr := range u.fx.Users {
				if usr.Email == c.Owner {
					id = usr.ID
				}
			}
			u.fx.Clients[i].OwnerID = &id
		}
	}
	u.mk = filepath.Join(dir, "master.key")
	if err := os.WriteFile(u.mk, []byte(u.fx.MasterKey), 0o600); err != nil {
		t.Fatal(err)
	}
	mk, err := hex.DecodeString(u.fx.MasterKey)
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	clock := func() time.Time { return u.fx.MadeAt.Add(time.Second + time.Since(start)) }
	o := wiring.DefaultServeOptions()
	o.Addr, o.BaseURL, o.AppURL, o.DB = "127.0.0.1:0", u.fx.BaseURL, u.fx.BaseURL, u.db
	o.CodeTTL, o.RefreshIdle, o.RefreshMax, o.Now = time.Minute, 720*time.Hour, 8760*time.Hour, clock
	if err := o.Check(); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	w, err := o.Wire(t.Context(), logger, u.db, mk)
	if err != nil {
		t.Fatalf("open the %s release's database: %v", u.fx.Release, err)
	}
	srv := w.HTTPServer(logger)
	done := make(chan struct{})
	go func() { srv.Serve(w.Ln); close(done) }()
	stopped := false
	u.stop = func() {
		if stopped {
			return
		}
		stopped = true
		srv.Shutdown(context.Background())
		<-done
		if err := w.CloseStore(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	t.Cleanup(u.stop)
	u.dial = w.Ln.Addr().String()
	u.hc = &http.Client{Transport: u.transport(), Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return u
}

func gunzipTo(t *testing.T, src, dst string) {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

// transport dials every request to the listener: the fixture's base URL
// (the iss of its tokens) is a name, not an address.
func (u *upgradeServer) transport() *http.Transport {
	return &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, u.dial)
	}}
}

// token posts a token request with client_secret_post (or, for a public
// client, client_id alone) and returns the status and the decoded body.
func (u *upgradeServer) token(t *testing.T, clientID, secret string, form url.Values) (int, map[string]any) {
	t.Helper()
	form.Set("client_id", clientID)
	if secret != "" {
		form.Set("client_secret", secret)
	}
	resp, err := u.hc.PostForm(u.fx.BaseURL+"/v2/auth/oauth2/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := map[string]any{}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("token endpoint %d: body is not JSON: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, body
}

// me calls /v2/me with tok and returns the status and the user ID.
func (u *upgradeServer) me(t *testing.T, tok string) (int, int64) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u.fx.BaseURL+"/v2/me", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := u.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Data.ID
}

// TestUpgradeFromRelease opens the fixture written by an earlier release
// (testdata/upgrade) and checks that nothing was lost: the published keys,
// tokens signed before, every live refresh token (it refreshes, twice),
// every revoked one (still refused), the live code (it exchanges), the
// login sessions (a sign-in needs no password), and, after a clean stop,
// the users, clients, secrets and keys as the CLI lists them. The server
// is wired in-process (with the fixture's clock) and the CLI runs
// in-process too (run), so the test stays beside the commands.
//
// testdata/upgrade is the newest fixture (the release before this one);
// testdata/upgrade-* are older ones, kept: every release they name must
// still upgrade.
func TestUpgradeFromRelease(t *testing.T) {
	clearConfigEnv(t) // the CLI runs in-process: no OAUTHD_* of the caller's
	dirs, err := filepath.Glob("testdata/upgrade-*")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range append([]string{"testdata/upgrade"}, dirs...) {
		t.Run(filepath.Base(dir), func(t *testing.T) { testUpgradeFrom(t, dir) })
	}
}

func testUpgradeFrom(t *testing.T, dir string) {
	u := startUpgrade(t, dir)
	fx := u.fx
	if fx.WAL.FirstRecordN == 0 {
		t.Fatal("the fixture's write-ahead log holds no record: regenerate it (scripts/upgrade-fixture.sh) so that replay is tested")
	}
	userByLogin := map[string]int64{}
	for _, usr := range fx.Users {
		userByLogin[usr.Username] = usr.ID
	}

	t.Run("jwks", func(t *testing.T) {
		var jwks struct {
			Keys []struct {
				Kid string `json:"kid"`
			} `json:"keys"`
		}
		resp, err := u.hc.Get(fx.BaseURL + "/.well-known/jwks.json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&jwks); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, k := range jwks.Keys {
			got = append(got, k.Kid)
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(fx.JWKSKids))
		if !slices.Equal(got, want) {
			t.Errorf("JWKS kids %v; the release published %v", got, want)
		}
	})

	t.Run("access tokens signed before", func(t *testing.T) {
		// The release signed ES256 with either of the two valid S values;
		// this one refuses a high S (no malleable tokens). A token of the
		// release with a high S is refused (401: its client refreshes,
		// see "refresh tokens"); one with a low S keeps working. The same
		// token with its S made low — what it would have been — works,
		// so nothing else about it was lost.
		highS := 0
		for _, a := range fx.Access {
			want := http.StatusOK
			if keystest.LowS(a.Token) != a.Token {
				want = http.StatusUnauthorized
				highS++
				if status, id := u.me(t, keystest.LowS(a.Token)); status != http.StatusOK || id != a.UserID {
					t.Errorf("%s, its S made low: /v2/me = %d, user %d; want 200, user %d", a.What, status, id, a.UserID)
				}
			}
			if status, id := u.me(t, a.Token); status != want || (want == http.StatusOK && id != a.UserID) {
				t.Errorf("%s: /v2/me = %d, user %d; want %d, user %d", a.What, status, id, want, a.UserID)
			}
		}
		t.Logf("%d of %d access tokens of the release had a high S and are refused", highS, len(fx.Access))
	})

	t.Run("refresh tokens", func(t *testing.T) {
		for _, r := range fx.Refresh {
			status, body := u.token(t, r.ClientID, r.Secret, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r.Token}})
			if !r.Live {
				if status != http.StatusBadRequest || body["error"] != "invalid_grant" {
					t.Errorf("%s (%s): refresh = %d %v; want 400 invalid_grant (it was dead before the upgrade)", r.What, r.Where, status, body)
				}
				continue
			}
			rt, _ := body["refresh_token"].(string)
			at, _ := body["access_token"].(string)
			if status != http.StatusOK || rt == "" || at == "" {
				t.Errorf("%s (%s): refresh = %d %v; want 200 with new tokens", r.What, r.Where, status, body)
				continue
			}
			if st, _ := u.me(t, at); st != http.StatusOK {
				t.Errorf("%s: /v2/me with the new access token = %d", r.What, st)
			}
			// The rotated token is this release's; it must rotate too, and
			// the token from the fixture is now a reused one.
			if status, body := u.token(t, r.ClientID, r.Secret, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}); status != http.StatusOK {
				t.Errorf("%s: the second refresh after the upgrade = %d %v", r.What, status, body)
			}
		}
	})

	t.Run("live code", func(t *testing.T) {
		for _, c := range fx.Codes {
			status, body := u.token(t, c.ClientID, c.Secret, url.Values{"grant_type": {"authorization_code"},
				"code": {c.Code}, "redirect_uri": {c.Redirect}, "code_verifier": {c.Verifier}})
			at, _ := body["access_token"].(string)
			if status != http.StatusOK || at == "" {
				t.Errorf("code (%s): exchange = %d %v; want 200", c.Where, status, body)
				continue
			}
			if st, id := u.me(t, at); st != http.StatusOK || id != c.UserID {
				t.Errorf("code: /v2/me = %d, user %d; want 200, user %d", st, id, c.UserID)
			}
		}
	})

	t.Run("sessions", func(t *testing.T) {
		client := fx.Clients[0] // an approved confidential client
		if client.Status != "approved" || client.Type != "confidential" || client.Legacy {
			t.Fatalf("the fixture's first client is %+v; want an approved, scoped, confidential one", client)
		}
		for _, s := range fx.Sessions {
			b := consenttest.New()
			b.Client.Transport = u.transport()
			base, _ := url.Parse(fx.BaseURL)
			b.Client.Jar.SetCookies(base, []*http.Cookie{{Name: s.Cookie, Value: s.Value, Path: "/"}})
			conf := &oauth2.Config{ClientID: client.ID, RedirectURL: client.Redirect[0], Scopes: client.Scopes[:1],
				Endpoint: oauth2.Endpoint{AuthURL: fx.BaseURL + "/auth/oauth2/authorize"}}
			verifier := oauth2.GenerateVerifier()
			// A wrong password: only a session found in the database gets
			// past the login page.
			got, err := b.Authorize(t.Context(), conf.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), s.Login, "not the password", true)
			var pe *consenttest.PageError
			if errors.As(err, &pe) {
				t.Errorf("%s's session (%s) was not found: the authorization request showed a page: %v", s.Login, s.Where, err)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			code := got.Query().Get("code")
			status, body := u.token(t, client.ID, client.Secrets[0].Secret, url.Values{"grant_type": {"authorization_code"},
				"code": {code}, "redirect_uri": {conf.RedirectURL}, "code_verifier": {verifier}})
			at, _ := body["access_token"].(string)
			if status != http.StatusOK {
				t.Errorf("%s's session: exchange = %d %v", s.Login, status, body)
				continue
			}
			if st, id := u.me(t, at); st != http.StatusOK || id != userByLogin[s.Login] {
				t.Errorf("%s's session: /v2/me = %d, user %d; want user %d", s.Login, st, id, userByLogin[s.Login])
			}
		}
	})

	t.Run("owners in the settings pages", func(t *testing.T) {
		// Each user signs in (a user whose email clashed at the upgrade
		// with the username, and the other way round) and finds exactly
		// the clients the fixture says are theirs; every other client,
		// the unclaimed one included, is a 404 and absent from the list.
		login := map[string]string{}
		for _, usr := range fx.Users {
			login[usr.Email] = usr.Email
		}
		login["\u017fam@example.com"] = "longs" // its email is sam's under the canonical form
		for _, usr := range fx.Users {
			b := consenttest.SignInSettings(t, fx.BaseURL, u.transport(), login[usr.Email], usr.Password)
			list := b.List(t)
			for _, c := range fx.Clients {
				status, _ := b.Client(t, c.ID)
				mine := *c.OwnerID == usr.ID
				if mine && status != http.StatusOK || !mine && status != http.StatusNotFound {
					t.Errorf("%s (user %d) opens %s (owner %q, user %d): %d; want %s", usr.Email, usr.ID, c.Name, c.Owner, c.OwnerID, status,
						map[bool]string{true: "200", false: "404"}[mine])
				}
				if strings.Contains(list, c.ID) != mine {
					t.Errorf("%s's client list shows %s: %v; want %v", usr.Email, c.Name, !mine, mine)
				}
				// What the look-alike did before: mint a secret for the
				// client, revoke its owner's. Both are a 404 for anyone
				// but the owner (the secrets are counted after the stop).
				if !mine && len(c.Secrets) > 0 {
					if status := b.GenerateSecret(t, c.ID); status != http.StatusNotFound {
						t.Errorf("%s mints a secret for %s: %d; want 404", usr.Email, c.Name, status)
					}
					if status := b.RevokeSecret(t, c.ID, c.Secrets[0].ID); status != http.StatusNotFound {
						t.Errorf("%s revokes %s's secret: %d; want 404", usr.Email, c.Name, status)
					}
				}
			}
		}
	})

	// A clean stop folds the log into the file; the CLI then reads the
	// records from the file alone.
	u.stop()
	t.Run("users, clients, secrets and keys", func(t *testing.T) {
		cli := func(v any, args ...string) {
			t.Helper()
			oneJSON(t, (&cli{t: t, db: u.db}).ok("", append([]string{"--master-key-file", u.mk}, append(args, "--json")...)...), v)
		}
		var users []struct {
			ID       int64  `json:"id"`
			Email    string `json:"email"`
			Username string `json:"username"`
			Name     string `json:"name"`
			TimeZone string `json:"time_zone"`
			Clash    string `json:"clash"`
		}
		cli(&users, "users", "list")
		if len(users) != len(fx.Users) {
			t.Errorf("users list has %d users; the release had %d", len(users), len(fx.Users))
		}
		for i := range min(len(users), len(fx.Users)) {
			g, w := users[i], fx.Users[i]
			if g.ID != w.ID || g.Email != w.Email || g.Username != w.Username || g.Name != w.Name || g.TimeZone != w.TimeZone {
				t.Errorf("user %d: %+v; the release had %+v", i, g, w)
			}
		}
		// The release let in two users whose emails (and two whose
		// usernames) are one identifier under the canonical form: the
		// later one keeps its record and is shown to the operator.
		clashes := map[string]string{}
		for _, g := range users {
			if g.Clash != "" {
				clashes[g.Username] = g.Clash
			}
		}
		withClashes := false // the fixture has the identity clashes (since ad3078e)
		for _, usr := range fx.Users {
			withClashes = withClashes || usr.Username == "longs"
		}
		switch {
		case withClashes && (len(clashes) != 2 || !strings.Contains(clashes["longs"], "email is also user 3's") || !strings.Contains(clashes["\uff44\uff41\uff4e"], "username is also user 5's")):
			t.Errorf("users list clashes = %q; want longs's email (user 3's) and ｄａｎ's username (user 5's)", clashes)
		case !withClashes && len(clashes) != 0:
			t.Errorf("users list clashes = %q; the fixture has none", clashes)
		}

		var unclaimed []string
		for _, c := range fx.Clients {
			var got struct {
				OwnerID        int64    `json:"owner_id"`
				Owner          string   `json:"owner"`
				UnclaimedOwner string   `json:"unclaimed_owner"`
				ID             string   `json:"client_id"`
				Name           string   `json:"name"`
				Type           string   `json:"client_type"`
				Status         string   `json:"status"`
				Legacy         bool     `json:"legacy"`
				Scopes         []string `json:"scopes"`
				Redirect       []string `json:"redirect_uris"`
			}
			cli(&got, "clients", "show", c.ID)
			if got.ID != c.ID || got.Name != c.Name || got.Type != c.Type || got.Status != c.Status || got.Legacy != c.Legacy ||
				!slices.Equal(got.Scopes, c.Scopes) || !slices.Equal(got.Redirect, c.Redirect) {
				t.Errorf("clients show %s = %+v; the release had %+v", c.ID, got, c)
			}
			switch owner := fx.Users[max(0, *c.OwnerID-1)]; {
			case *c.OwnerID == 0:
				unclaimed = append(unclaimed, c.ID)
				if got.OwnerID != 0 || got.Owner != "" || got.UnclaimedOwner != c.Owner {
					t.Errorf("clients show %s: owner %d %q, unclaimed %q; want unclaimed %q (no user has that email)", c.ID, got.OwnerID, got.Owner, got.UnclaimedOwner, c.Owner)
				}
			case got.OwnerID != *c.OwnerID || got.Owner != owner.Email || got.UnclaimedOwner != "":
				t.Errorf("clients show %s (owner %q in the release): owner %d %q; want user %d %q", c.ID, c.Owner, got.OwnerID, got.Owner, c.OwnerID, owner.Email)
			}
			var secrets []struct {
				ID string `json:"secret_id"`
			}
			cli(&secrets, "clients", "secrets", "list", c.ID)
			var gotIDs, wantIDs []string
			for _, s := range secrets {
				gotIDs = append(gotIDs, s.ID)
			}
			for _, s := range c.Secrets {
				if s.ID != "" { // an imported secret's ID was never shown
					wantIDs = append(wantIDs, s.ID)
				}
			}
			if len(secrets) != len(c.Secrets) || (len(wantIDs) == len(c.Secrets) && !slices.Equal(slices.Sorted(slices.Values(gotIDs)), slices.Sorted(slices.Values(wantIDs)))) {
				t.Errorf("%s: secrets %v; the release had %v", c.Name, gotIDs, wantIDs)
			}
		}

		var listed []struct {
			ID string `json:"client_id"`
		}
		cli(&listed, "clients", "list", "--owner", "unclaimed")
		var ids []string
		for _, c := range listed {
			ids = append(ids, c.ID)
		}
		if !slices.Equal(ids, unclaimed) {
			t.Errorf("clients list --owner unclaimed = %v; want %v", ids, unclaimed)
		}

		var got []upgradeKey
		cli(&got, "keys", "list")
		var want []upgradeKey
		for _, k := range fx.Keys {
			// A retired key leaves once its tokens have expired by the wall
			// clock (the CLI runs on it); its public part was checked above.
			if k.State == "retired" && !slices.ContainsFunc(got, func(g upgradeKey) bool { return g.Kid == k.Kid }) {
				continue
			}
			want = append(want, k)
		}
		byKid := func(a, b upgradeKey) int { return strings.Compare(a.Kid, b.Kid) }
		slices.SortFunc(got, byKid)
		slices.SortFunc(want, byKid)
		if !slices.Equal(got, want) {
			t.Errorf("keys list = %+v; the release had %+v", got, want)
		}
	})

	if dir != "testdata/upgrade" {
		return
	}
	t.Run("copied to PostgreSQL", func(t *testing.T) {
		if testing.Short() {
			t.Skip("-short: starts PostgreSQL")
		}
		// The upgraded database copied to PostgreSQL keeps every owner
		// and every clash (the later user of a clash stays out of the
		// unique index there too).
		pg := pgtest.New(t)
		(&cli{t: t, db: u.db}).ok("", "--master-key-file", u.mk, "store", "copy", "--from", u.db, "--to", pg)
		type view struct {
			Users   []map[string]any
			Clients []map[string]any
		}
		read := func(db string) view {
			var v view
			oneJSON(t, (&cli{t: t, db: db}).ok("", "--master-key-file", u.mk, "users", "list", "--json"), &v.Users)
			oneJSON(t, (&cli{t: t, db: db}).ok("", "--master-key-file", u.mk, "clients", "list", "--json"), &v.Clients)
			return v
		}
		onFile, onPG := read(u.db), read(pg)
		for i := range onFile.Users {
			if fmt.Sprint(onFile.Users[i]) != fmt.Sprint(onPG.Users[i]) {
				t.Errorf("user %d on PostgreSQL: %v; on the file: %v", i, onPG.Users[i], onFile.Users[i])
			}
		}
		for i := range onFile.Clients {
			f, p := onFile.Clients[i], onPG.Clients[i]
			if f["client_id"] != p["client_id"] || f["owner_id"] != p["owner_id"] || f["owner"] != p["owner"] || f["unclaimed_owner"] != p["unclaimed_owner"] {
				t.Errorf("client %v on PostgreSQL: owner %v %v %v; on the file: %v %v %v", f["client_id"],
					p["owner_id"], p["owner"], p["unclaimed_owner"], f["owner_id"], f["owner"], f["unclaimed_owner"])
			}
		}
		if len(onPG.Users) != len(onFile.Users) || len(onPG.Clients) != len(onFile.Clients) {
			t.Errorf("PostgreSQL has %d users, %d clients; the file %d, %d", len(onPG.Users), len(onPG.Clients), len(onFile.Users), len(onFile.Clients))
		}
		// A look-alike is refused there as well.
		if _, stderr, err := (&cli{t: t, db: pg}).run("pw-12345678\n", "users", "add", "--email", "SAM@example.com", "--username", "sam2", "--name", "S", "--password-stdin"); err == nil || !strings.Contains(stderr, "already exists") {
			t.Errorf("users add SAM@example.com on PostgreSQL: %v %s; want refused", err, stderr)
		}
	})
}
