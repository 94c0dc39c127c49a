// Command upgradefixture makes the upgrade fixture of cmd/oauthd's
// TestUpgradeFromRelease: a database written by a given oauthd binary (a
// release), with the credentials it holds, so that a later oauthd can prove
// that it opens the database with nothing lost.
//
//	go run ./scripts/upgradefixture -oauthd /path/to/old/oauthd -release COMMIT -out cmd/oauthd/testdata/upgrade
//
// (scripts/upgrade-fixture.sh builds the release from a commit and runs
// this.) It runs the binary as the operator and a user would: the CLI for
// users, clients, secrets and keys, `serve` for the login, consent and token
// flows, over loopback HTTP only. It stops the server once with SIGTERM (the
// write-ahead log is checkpointed into the file), restarts it, does more
// flows, and kills it with SIGKILL, so that the log holds records that no
// checkpoint copied into the file. It writes the database file and its log
// gzipped, and fixture.json with every credential (test-only values) and
// what the upgraded server must do with each.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"golang.org/x/oauth2"

	"oauthd/consent/consenttest"
)

// BaseURL is the fixture server's --base-url and --app-url: the iss of its
// tokens. It is not an address: every request is dialled to the listener.
const BaseURL = "http://oauthd.upgrade.test"

const redirectURI = "http://127.0.0.1:9/cb"

// MasterKey encrypts the fixture's signing keys (test-only).
const MasterKey = "5f0c6bd1a3e24e0f9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f60"

// Fixture is fixture.json.
type Fixture struct {
	Release   string     `json:"release"`    // the commit the binary was built from
	MadeAt    time.Time  `json:"made_at"`    // just before the SIGKILL
	BaseURL   string     `json:"base_url"`   // --base-url and --app-url
	MasterKey string     `json:"master_key"` // hex
	CodeTTL   string     `json:"code_ttl"`   // serve's --code-ttl
	Users     []User     `json:"users"`
	Clients   []Client   `json:"clients"`
	Keys      []Key      `json:"keys"`      // keys list --json at the end
	JWKSKids  []string   `json:"jwks_kids"` // the published kids at the end
	Refresh   []Refresh  `json:"refresh_tokens"`
	Access    []Access   `json:"access_tokens"`
	Codes     []Code     `json:"codes"`
	Sessions  []Session  `json:"sessions"`
	WAL       WALSummary `json:"wal"`
	Notes     []string   `json:"notes"`
	clientsBy map[string]*Client
}

type User struct {
	ID       int64  `json:"id"`
	Email    string `json:"email"`
	Username string `json:"username"`
	Name     string `json:"name"`
	TimeZone string `json:"time_zone"`
	Password string `json:"password"`
}

type Client struct {
	Name   string `json:"name"`
	ID     string `json:"client_id"`
	Type   string `json:"client_type"` // confidential or public
	Status string `json:"status"`      // pending, approved, rejected
	Legacy bool   `json:"legacy"`
	Owner  string `json:"owner"` // as the release stored it
	// OwnerID is the user the client must belong to after the upgrade; 0:
	// the owner names no user, and the client must show as unclaimed.
	OwnerID  int64    `json:"owner_id"`
	Scopes   []string `json:"scopes"`
	Secrets  []Secret `json:"secrets"`
	Redirect []string `json:"redirect_uris"`
}

type Secret struct {
	ID     string `json:"secret_id"`
	Secret string `json:"client_secret"`
}

type Key struct {
	Kid   string `json:"kid"`
	Alg   string `json:"alg"`
	State string `json:"state"`
}

// Refresh is a refresh token and what the upgraded server must answer.
type Refresh struct {
	What     string `json:"what"`
	ClientID string `json:"client_id"`
	Secret   string `json:"client_secret,omitempty"` // the one to authenticate with; empty for a public client
	Token    string `json:"refresh_token"`
	Live     bool   `json:"live"` // false: revoked, or its family revoked; must stay refused
	Where    string `json:"where"`
}

// Access is an access token and the user /v2/me must name.
type Access struct {
	What   string `json:"what"`
	Token  string `json:"access_token"`
	Kid    string `json:"kid"`
	UserID int64  `json:"user_id"`
}

// Code is an authorization code not yet exchanged.
type Code struct {
	ClientID string `json:"client_id"`
	Secret   string `json:"client_secret"`
	Code     string `json:"code"`
	Verifier string `json:"code_verifier"`
	Redirect string `json:"redirect_uri"`
	UserID   int64  `json:"user_id"`
	Where    string `json:"where"`
}

// Session is a login session cookie.
type Session struct {
	Cookie string `json:"cookie"`
	Value  string `json:"value"`
	Login  string `json:"login"`
	Where  string `json:"where"`
}

// WALSummary describes the log as the SIGKILL left it.
type WALSummary struct {
	Size         int64 `json:"size"`
	FirstRecordN int   `json:"first_record_payload_bytes"` // the first record's length field: > 0
}

func main() {
	bin := flag.String("oauthd", "", "the oauthd binary to make the fixture with (required)")
	release := flag.String("release", "", "the commit it was built from (recorded in fixture.json)")
	out := flag.String("out", "cmd/oauthd/testdata/upgrade", "output directory")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "upgradefixture: pass -oauthd PATH (see scripts/upgrade-fixture.sh)")
		os.Exit(2)
	}
	if err := makeFixture(*bin, *release, *out); err != nil {
		fmt.Fprintln(os.Stderr, "upgradefixture:", err)
		os.Exit(1)
	}
}

type gen struct {
	bin, db, mkFile string
	fx              *Fixture
	srv             *exec.Cmd
	addr            string // the listener, host:port
	hc              *http.Client
}

func makeFixture(bin, release, out string) error {
	tmp, err := os.MkdirTemp("", "upgradefixture-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	g := &gen{bin: bin, db: filepath.Join(tmp, "oauthd.db"), mkFile: filepath.Join(tmp, "master.key"),
		fx: &Fixture{Release: release, BaseURL: BaseURL, MasterKey: MasterKey, CodeTTL: "10m", clientsBy: map[string]*Client{}}}
	if err := os.WriteFile(g.mkFile, []byte(MasterKey+"\n"), 0o600); err != nil {
		return err
	}
	g.hc = &http.Client{Transport: g.transport(), Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer g.kill()
	if err := g.build(); err != nil {
		return err
	}
	return g.write(out)
}

// transport dials every request to the server's listener, whatever the
// host (BaseURL is a name, not an address).
func (g *gen) transport() *http.Transport {
	return &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, g.addr)
	}}
}

func (g *gen) browser() *consenttest.Browser {
	b := consenttest.New()
	b.Client.Transport = g.transport()
	return b
}

// build runs the fixture's story: the operator's set-up, phase 1's flows
// and a SIGTERM, phase 2's restart, key rotation and flows, then the
// record of what the upgraded server must accept and a SIGKILL.
func (g *gen) build() error {
	if err := g.start(); err != nil {
		return err
	}
	c, err := g.operator()
	if err != nil {
		return err
	}
	p1, err := g.phase1(c)
	if err != nil {
		return err
	}
	if err := g.stop(syscall.SIGTERM); err != nil {
		return err
	}
	if err := g.start(); err != nil {
		return err
	}
	p2, err := g.phase2(c, p1)
	if err != nil {
		return err
	}
	g.record(c, p1, p2)
	if err := g.recordKeys(); err != nil {
		return err
	}
	g.fx.MadeAt = time.Now().UTC()
	if err := g.stop(syscall.SIGKILL); err != nil {
		return err
	}
	if err := g.recordWAL(); err != nil {
		return err
	}
	g.fx.Notes = []string{
		"Made by scripts/upgrade-fixture.sh; test-only credentials.",
		"The server was stopped with SIGTERM once (the log checkpointed into the file), restarted, rotated its keys (EdDSA next) and was killed with SIGKILL: records marked where=log exist only in oauthd.db-wal.",
		"Clients: Calendar Sync (confidential, approved, 2 secrets), Phone App (public, approved), Pending App (pending), Rejected App (rejected), Legacy Import (legacy, approved, no scopes).",
		"Identities (issue 22): sam@example.com and \u017fam@example.com (long s) are one email under the canonical form, dan and \uff44\uff41\uff4e (fullwidth) one username; each owns a client. Legacy legacy-mixed-case-2018's owner is Bob@Example.COM (bob); legacy-orphan-2017's owner gone@example.com is no user (unclaimed after the upgrade).",
	}
	return nil
}

// cast is who the story's flows run as: the users and clients the
// operator made.
type cast struct {
	ann, bob          User
	conf, pub, legacy *Client
}

// operator makes, over the admin socket as an operator would, the users,
// the clients in every state (with a second secret and a legacy import)
// and the identities.
func (g *gen) operator() (cast, error) {
	fx := g.fx
	fx.Users = []User{
		{Email: "ann@example.com", Username: "ann", Name: "Ann Lee", TimeZone: "Europe/Berlin", Password: "ann-password-123"},
		{Email: "bob@example.com", Username: "bob", Name: "Bob Ray", TimeZone: "America/New_York", Password: "bob-password-456"},
	}
	for i, u := range fx.Users {
		var got User
		if err := g.cliJSON(u.Password, &got, "users", "add", "--email", u.Email, "--username", u.Username, "--name", u.Name, "--time-zone", u.TimeZone, "--password-stdin"); err != nil {
			return cast{}, err
		}
		fx.Users[i].ID = got.ID
	}
	c := cast{ann: fx.Users[0], bob: fx.Users[1]}
	var err error
	if c.conf, err = g.create("Calendar Sync", c.ann.Email, false, "PROFILE_READ,BOOKING_READ,SCHEDULE_READ"); err != nil {
		return cast{}, err
	}
	if c.pub, err = g.create("Phone App", c.bob.Email, true, "PROFILE_READ,BOOKING_READ"); err != nil {
		return cast{}, err
	}
	if _, err := g.create("Pending App", c.ann.Email, false, "PROFILE_READ"); err != nil {
		return cast{}, err
	}
	rejected, err := g.create("Rejected App", c.bob.Email, false, "EVENT_TYPE_READ")
	if err != nil {
		return cast{}, err
	}
	for _, cl := range []*Client{c.conf, c.pub} {
		if _, err := g.cli("", "clients", "approve", cl.ID); err != nil {
			return cast{}, err
		}
		cl.Status = "approved"
	}
	if _, err := g.cli("", "clients", "reject", rejected.ID, "--reason", "not a real product"); err != nil {
		return cast{}, err
	}
	rejected.Status = "rejected"
	var second Secret
	if err := g.cliJSON("", &second, "clients", "secrets", "generate", c.conf.ID); err != nil {
		return cast{}, err
	}
	c.conf.Secrets = append(c.conf.Secrets, second)
	if c.legacy, err = g.importLegacy(c.ann.Email); err != nil {
		return cast{}, err
	}
	return c, g.identities()
}

// phase1Out is what phase 1 leaves for the record and for phase 2.
type phase1Out struct {
	annB                 *consenttest.Browser // ann's browser, signed in
	t1, t1c, t2b, t3, t4 tokenResponse
	t5b                  tokenResponse
	annCookie            *http.Cookie
}

// confCode is an authorization of conf by u in b, exchanged with conf's
// first secret.
func (g *gen) confCode(c cast, b *consenttest.Browser, u User, scopes ...string) (tokenResponse, error) {
	code, verifier, err := g.authorize(b, c.conf, u, scopes)
	if err != nil {
		return tokenResponse{}, err
	}
	return g.exchange(c.conf, c.conf.Secrets[0].Secret, code, verifier)
}

// phase1 runs the flows whose records the SIGTERM checkpoints into the
// file: rotations with both secrets, a public client, a legacy client, a
// revocation and a reuse that revokes its family.
func (g *gen) phase1(c cast) (phase1Out, error) {
	conf, pub, legacy, ann, bob := c.conf, c.pub, c.legacy, c.ann, c.bob
	out := phase1Out{annB: g.browser()}
	bobB := g.browser()
	var err error
	if out.t1, err = g.confCode(c, out.annB, ann, "PROFILE_READ", "BOOKING_READ"); err != nil {
		return out, err
	}
	t1b, err := g.refresh(conf, conf.Secrets[0].Secret, out.t1.RefreshToken)
	if err != nil {
		return out, err
	}
	if out.t1c, err = g.refresh(conf, conf.Secrets[1].Secret, t1b.RefreshToken); err != nil { // the second secret
		return out, err
	}
	code2, ver2, err := g.authorize(bobB, pub, bob, []string{"PROFILE_READ", "BOOKING_READ"})
	if err != nil {
		return out, err
	}
	t2, err := g.exchange(pub, "", code2, ver2)
	if err != nil {
		return out, err
	}
	if out.t2b, err = g.refresh(pub, "", t2.RefreshToken); err != nil {
		return out, err
	}
	code3, ver3, err := g.authorize(out.annB, legacy, ann, nil) // a legacy client's URL carries no scope
	if err != nil {
		return out, err
	}
	if out.t3, err = g.exchange(legacy, legacy.Secrets[0].Secret, code3, ver3); err != nil {
		return out, err
	}
	if out.t4, err = g.confCode(c, out.annB, ann, "PROFILE_READ"); err != nil {
		return out, err
	}
	if err := g.revoke(conf, conf.Secrets[0].Secret, out.t4.RefreshToken); err != nil {
		return out, err
	}
	t5, err := g.confCode(c, out.annB, ann, "BOOKING_READ")
	if err != nil {
		return out, err
	}
	if out.t5b, err = g.refresh(conf, conf.Secrets[0].Secret, t5.RefreshToken); err != nil {
		return out, err
	}
	if _, err := g.refresh(conf, conf.Secrets[0].Secret, t5.RefreshToken); err == nil { // reuse: the family is revoked
		return out, errors.New("a rotated refresh token was accepted")
	}
	out.annCookie, err = sessionCookie(out.annB)
	return out, err
}

// phase2Out is what phase 2 leaves for the record.
type phase2Out struct {
	t1d, t6, t7       tokenResponse
	liveCode, liveVer string
	bobCookie         *http.Cookie
}

// phase2 runs, after the restart, the flows whose records live only in
// the log: a key rotation, a rotation of phase 1's family, a new session,
// new families and a code not yet exchanged.
func (g *gen) phase2(c cast, p1 phase1Out) (phase2Out, error) {
	var out phase2Out
	if _, err := g.cli("", "keys", "rotate", "--alg", "EdDSA"); err != nil {
		return out, err
	}
	var err error
	if out.t1d, err = g.refresh(c.conf, c.conf.Secrets[1].Secret, p1.t1c.RefreshToken); err != nil { // the family's newest version is in the log only
		return out, err
	}
	bobB2 := g.browser() // a session that lives only in the log
	code6, ver6, err := g.authorize(bobB2, c.pub, c.bob, []string{"PROFILE_READ"})
	if err != nil {
		return out, err
	}
	if out.t6, err = g.exchange(c.pub, "", code6, ver6); err != nil {
		return out, err
	}
	if out.t7, err = g.confCode(c, p1.annB, c.ann, "PROFILE_READ", "SCHEDULE_READ"); err != nil { // ann's session from phase 1
		return out, err
	}
	if out.liveCode, out.liveVer, err = g.authorize(p1.annB, c.conf, c.ann, []string{"PROFILE_READ", "BOOKING_READ"}); err != nil {
		return out, err
	}
	out.bobCookie, err = sessionCookie(bobB2)
	return out, err
}

// record writes into the fixture every credential the story made and what
// the upgraded server must do with it.
func (g *gen) record(c cast, p1 phase1Out, p2 phase2Out) {
	fx, conf, pub, legacy, ann, bob := g.fx, c.conf, c.pub, c.legacy, c.ann, c.bob
	fx.Refresh = []Refresh{
		{What: "confidential, rotated 3 times with both secrets", ClientID: conf.ID, Secret: conf.Secrets[0].Secret, Token: p2.t1d.RefreshToken, Live: true, Where: "family in the file, newest version in the log"},
		{What: "public client (PKCE), rotated once", ClientID: pub.ID, Token: p1.t2b.RefreshToken, Live: true, Where: "file"},
		{What: "legacy client, unrestricted", ClientID: legacy.ID, Secret: legacy.Secrets[0].Secret, Token: p1.t3.RefreshToken, Live: true, Where: "file"},
		{What: "public client, new family", ClientID: pub.ID, Token: p2.t6.RefreshToken, Live: true, Where: "log"},
		{What: "confidential, new family after the key rotation", ClientID: conf.ID, Secret: conf.Secrets[1].Secret, Token: p2.t7.RefreshToken, Live: true, Where: "log"},
		{What: "revoked (RFC 7009)", ClientID: conf.ID, Secret: conf.Secrets[0].Secret, Token: p1.t4.RefreshToken, Where: "file"},
		{What: "family revoked by reuse: its newest token", ClientID: conf.ID, Secret: conf.Secrets[0].Secret, Token: p1.t5b.RefreshToken, Where: "file"},
	}
	fx.Access = []Access{
		{What: "signed before the key rotation (by the now retired key)", Token: p1.t1.AccessToken, UserID: ann.ID},
		{What: "legacy, unrestricted", Token: p1.t3.AccessToken, UserID: ann.ID},
		{What: "signed after the key rotation", Token: p2.t7.AccessToken, UserID: ann.ID},
		{What: "public client, after the rotation", Token: p2.t6.AccessToken, UserID: bob.ID},
	}
	for i := range fx.Access {
		fx.Access[i].Kid = kidOf(fx.Access[i].Token)
	}
	fx.Codes = []Code{{ClientID: conf.ID, Secret: conf.Secrets[0].Secret, Code: p2.liveCode, Verifier: p2.liveVer, Redirect: redirectURI, UserID: ann.ID, Where: "log"}}
	fx.Sessions = []Session{
		{Cookie: p1.annCookie.Name, Value: p1.annCookie.Value, Login: ann.Username, Where: "file"},
		{Cookie: p2.bobCookie.Name, Value: p2.bobCookie.Value, Login: bob.Username, Where: "log"},
	}
}

// recordKeys writes the signing keys (`keys list`) and the JWKS's kids
// into the fixture.
func (g *gen) recordKeys() error {
	var keys []Key
	if err := g.cliJSON("", &keys, "keys", "list"); err != nil {
		return err
	}
	g.fx.Keys = keys
	var jwks struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	if err := g.getJSON("/.well-known/jwks.json", &jwks); err != nil {
		return err
	}
	for _, k := range jwks.Keys {
		g.fx.JWKSKids = append(g.fx.JWKSKids, k.Kid)
	}
	return nil
}

// recordWAL writes the log's size and first record's length into the
// fixture, and fails when the SIGKILL left no record to replay.
func (g *gen) recordWAL() error {
	wal, err := os.ReadFile(g.db + "-wal")
	if err != nil {
		return err
	}
	g.fx.WAL = WALSummary{Size: int64(len(wal))}
	if len(wal) >= 4 {
		g.fx.WAL.FirstRecordN = int(binary.LittleEndian.Uint32(wal))
	}
	if g.fx.WAL.FirstRecordN == 0 {
		return errors.New("the log holds no record after the SIGKILL: the fixture would not test its replay")
	}
	return nil
}

// start runs serve on the database and waits until it is ready.
func (g *gen) start() error {
	cmd := exec.Command(g.bin, "--db", g.db, "--master-key-file", g.mkFile, "--log-level", "info",
		"serve", "--addr", "127.0.0.1:0", "--base-url", BaseURL, "--app-url", BaseURL, "--code-ttl", g.fx.CodeTTL,
		// No reuse grace (on by default in serve): a rotated token presented
		// again revokes its family at once, as the fixture's family revoked
		// by reuse needs.
		"--refresh-reuse-grace", "0")
	cmd.Env = cleanEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	g.srv = cmd
	listen := regexp.MustCompile(`listening on http://(127\.0\.0\.1:[0-9]+)`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listen.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case g.addr = <-found:
	case <-time.After(30 * time.Second):
		return errors.New("serve did not say where it listens within 30 s")
	}
	for range 100 {
		resp, err := g.hc.Get(BaseURL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("serve never became ready")
}

func (g *gen) stop(sig syscall.Signal) error {
	if err := g.srv.Process.Signal(sig); err != nil {
		return err
	}
	err := g.srv.Wait()
	g.srv = nil
	if sig == syscall.SIGTERM && err != nil {
		return fmt.Errorf("serve after SIGTERM: %w", err)
	}
	return nil
}

func (g *gen) kill() {
	if g.srv != nil {
		g.srv.Process.Kill()
		g.srv.Wait()
	}
}

// cleanEnv is the environment without OAUTHD_* variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OAUTHD_") {
			env = append(env, kv)
		}
	}
	return env
}

// cli runs one CLI command on the database (over the admin socket while
// serve runs) and returns its stdout.
func (g *gen) cli(stdin string, args ...string) ([]byte, error) {
	cmd := exec.Command(g.bin, append([]string{"--db", g.db, "--master-key-file", g.mkFile}, args...)...)
	cmd.Env = cleanEnv()
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("oauthd %s: %w: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

func (g *gen) cliJSON(stdin string, v any, args ...string) error {
	out, err := g.cli(stdin, append(args, "--json")...)
	if err != nil {
		return err
	}
	return json.Unmarshal(out, v)
}

func (g *gen) create(name, owner string, public bool, scopes string) (*Client, error) {
	args := []string{"clients", "create", "--owner", owner, "--name", name, "--redirect-uri", redirectURI, "--scope", scopes}
	if public {
		args = append(args, "--public")
	}
	var got struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		SecretID     string `json:"secret_id"`
		Status       string `json:"status"`
		ClientType   string `json:"client_type"`
	}
	if err := g.cliJSON("", &got, args...); err != nil {
		return nil, err
	}
	c := &Client{Name: name, ID: got.ClientID, Type: got.ClientType, Status: got.Status, Owner: owner,
		OwnerID: g.userID(owner), Scopes: strings.Split(scopes, ","), Redirect: []string{redirectURI}}
	if got.ClientSecret != "" {
		c.Secrets = []Secret{{ID: got.SecretID, Secret: got.ClientSecret}}
	}
	g.fx.Clients = append(g.fx.Clients, *c)
	return g.track(c), nil
}

// userID is the ID of the fixture's user whose email is exactly email.
func (g *gen) userID(email string) int64 {
	for _, u := range g.fx.Users {
		if u.Email == email {
			return u.ID
		}
	}
	return 0
}

// track keeps c's record in the fixture up to date: the fixture's Clients
// are written at the end from the tracked pointers.
func (g *gen) track(c *Client) *Client {
	g.fx.clientsBy[c.ID] = c
	return c
}

// identities adds what the release let in and the identity rules of the
// next one (issue 22) must upgrade: users whose emails or usernames are
// one identifier under the canonical form (Unicode case folding, NFKC,
// width) but were two under the release's strings.ToLower, clients owned
// by each of them, a legacy client whose owner is spelled in another case,
// and one whose owner is no user at all.
func (g *gen) identities() error {
	fx := g.fx
	more := []User{
		{Email: "sam@example.com", Username: "sam", Name: "Sam Fox", TimeZone: "UTC", Password: "sam-password-789"},
		// U+017F LATIN SMALL LETTER LONG S folds to s: the same email as
		// Sam's under the canonical form. The release stored both.
		{Email: "\u017fam@example.com", Username: "longs", Name: "Long S", TimeZone: "UTC", Password: "longs-password-012"},
		{Email: "dan@example.com", Username: "dan", Name: "Dan Kay", TimeZone: "UTC", Password: "dan-password-345"},
		// Fullwidth letters: the same username as Dan's under PRECIS.
		{Email: "dan.wide@example.com", Username: "\uff44\uff41\uff4e", Name: "Dan Wide", TimeZone: "UTC", Password: "wide-password-678"},
	}
	for _, u := range more {
		var got User
		if err := g.cliJSON(u.Password, &got, "users", "add", "--email", u.Email, "--username", u.Username, "--name", u.Name, "--time-zone", u.TimeZone, "--password-stdin"); err != nil {
			return err
		}
		u.ID = got.ID
		fx.Users = append(fx.Users, u)
	}
	sam, longs, wide := fx.Users[len(fx.Users)-4], fx.Users[len(fx.Users)-3], fx.Users[len(fx.Users)-1]
	for _, o := range []struct {
		name string
		u    User
	}{{"Sam App", sam}, {"Long S App", longs}, {"Wide App", wide}} {
		c, err := g.create(o.name, o.u.Email, false, "PROFILE_READ")
		if err != nil {
			return err
		}
		c.OwnerID = o.u.ID
	}
	bob := fx.Users[1]
	for _, l := range []struct {
		id, owner string
		ownerID   int64
	}{{"legacy-mixed-case-2018", "Bob@Example.COM", bob.ID}, {"legacy-orphan-2017", "gone@example.com", 0}} {
		c := &Client{Name: "Legacy " + l.id, ID: l.id, Type: "confidential", Status: "approved", Legacy: true,
			Owner: l.owner, OwnerID: l.ownerID, Redirect: []string{redirectURI}, Secrets: []Secret{{Secret: "legacy-secret-" + l.id}}}
		if err := g.importClient(c); err != nil {
			return err
		}
	}
	return nil
}

func (g *gen) importLegacy(owner string) (*Client, error) {
	c := &Client{Name: "Legacy Import", ID: "legacy-calendar-2019", Type: "confidential", Status: "approved", Legacy: true,
		Owner: owner, Redirect: []string{redirectURI}, Secrets: []Secret{{Secret: "legacy-secret-4f1b9e0c7a2d6e8b"}}}
	for _, u := range g.fx.Users {
		if u.Email == owner {
			c.OwnerID = u.ID
		}
	}
	if err := g.importClient(c); err != nil {
		return nil, err
	}
	return c, nil
}

// importClient imports c, a legacy client, with `clients import`.
func (g *gen) importClient(c *Client) error {
	owner := c.Owner
	file := filepath.Join(filepath.Dir(g.db), "legacy.json")
	raw, _ := json.Marshal([]map[string]any{{"client_id": c.ID, "name": c.Name, "owner": owner,
		"redirect_uris": c.Redirect, "client_secret": c.Secrets[0].Secret, "client_type": c.Type}})
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		return err
	}
	if _, err := g.cli("", "clients", "import", file); err != nil {
		return err
	}
	g.fx.Clients = append(g.fx.Clients, *c)
	g.track(c)
	return nil
}

// authorize runs the authorization request through the login and consent
// pages with b (Allow) and returns the code and the PKCE verifier.
func (g *gen) authorize(b *consenttest.Browser, c *Client, u User, scopes []string) (code, verifier string, err error) {
	conf := &oauth2.Config{ClientID: c.ID, RedirectURL: redirectURI, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: BaseURL + "/auth/oauth2/authorize"}}
	verifier = oauth2.GenerateVerifier()
	got, err := b.Authorize(context.Background(), conf.AuthCodeURL("fixture-state", oauth2.S256ChallengeOption(verifier)), u.Username, u.Password, true)
	if err != nil {
		return "", "", fmt.Errorf("authorize %s as %s: %w", c.Name, u.Username, err)
	}
	if code = got.Query().Get("code"); code == "" {
		return "", "", fmt.Errorf("authorize %s: redirected to %s", c.Name, got.Redacted())
	}
	return code, verifier, nil
}

type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	Error        string `json:"error"`
}

func (g *gen) token(c *Client, secret string, form url.Values) (tokenResponse, error) {
	var tr tokenResponse
	form.Set("client_id", c.ID)
	if secret != "" {
		form.Set("client_secret", secret)
	}
	resp, err := g.hc.PostForm(BaseURL+"/v2/auth/oauth2/token", form)
	if err != nil {
		return tr, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &tr); err != nil {
		return tr, fmt.Errorf("token endpoint: %d %s", resp.StatusCode, raw)
	}
	if resp.StatusCode != http.StatusOK || tr.RefreshToken == "" {
		return tr, fmt.Errorf("token endpoint: %d %s", resp.StatusCode, raw)
	}
	return tr, nil
}

func (g *gen) exchange(c *Client, secret, code, verifier string) (tokenResponse, error) {
	return g.token(c, secret, url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {redirectURI}, "code_verifier": {verifier}})
}

func (g *gen) refresh(c *Client, secret, rt string) (tokenResponse, error) {
	return g.token(c, secret, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}})
}

func (g *gen) revoke(c *Client, secret, tok string) error {
	resp, err := g.hc.PostForm(BaseURL+"/v2/auth/oauth2/revoke", url.Values{"token": {tok}, "client_id": {c.ID}, "client_secret": {secret}})
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revoke: %d", resp.StatusCode)
	}
	return nil
}

func (g *gen) getJSON(path string, v any) error {
	resp, err := g.hc.Get(BaseURL + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// sessionCookie is the login session cookie b holds.
func sessionCookie(b *consenttest.Browser) (*http.Cookie, error) {
	u, _ := url.Parse(BaseURL + "/auth/login")
	for _, c := range b.Client.Jar.Cookies(u) {
		if strings.HasPrefix(c.Value, "oauthd_ss_") {
			return c, nil
		}
	}
	return nil, errors.New("no session cookie (oauthd_ss_…) after the login")
}

// kidOf is the kid in a JWT's header.
func kidOf(jwt string) string {
	head, _, _ := strings.Cut(jwt, ".")
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ""
	}
	var h struct {
		Kid string `json:"kid"`
	}
	json.Unmarshal(raw, &h)
	return h.Kid
}

func (g *gen) write(out string) error {
	fx := g.fx
	for i := range fx.Clients {
		fx.Clients[i] = *fx.clientsBy[fx.Clients[i].ID]
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"oauthd.db", "oauthd.db-wal"} {
		if err := gzipFile(filepath.Join(filepath.Dir(g.db), name), filepath.Join(out, name+".gz")); err != nil {
			return err
		}
	}
	raw, err := json.MarshalIndent(fx, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "fixture.json"), append(raw, '\n'), 0o644)
}

func gzipFile(src, dst string) error {
	raw, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Name = filepath.Base(src)
	zw.ModTime = time.Unix(0, 0)
	if _, err := zw.Write(raw); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}
