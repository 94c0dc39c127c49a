package e2e

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"oauthd/consent/consenttest"
	"oauthd/data/postgres/pgtest"
)

// oauthdBin is the oauthd binary built once by TestMain for the tests that
// run the real process.
var oauthdBin string

// shortLine is what a -short run prints instead of running the package.
const shortLine = "e2e: -short: skipping the end-to-end suites (they build and start the binary)"

func TestMain(m *testing.M) {
	flag.Parse() // testing.Short reads the flags
	if testing.Short() {
		consenttest.Notice(shortLine) // seen without -v, as the browser skip line is
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "oauthd-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	oauthdBin = filepath.Join(dir, "oauthd")
	build := exec.Command("go", "build", "-o", oauthdBin, "oauthd/cmd/oauthd") // from this directory or another
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build oauthd:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := consenttest.Main(m) // m.Run, and one line when the browser tests were skipped
	pgtest.Stop()               // the private PostgreSQL cluster, if a test started one
	os.RemoveAll(dir)
	os.Exit(code)
}

// cleanEnv is the environment without OAUTHD_* and OTEL_* variables (a
// test that wants traces sets its own).
func cleanEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "OAUTHD_") || strings.HasPrefix(kv, "OTEL_")
	})
}

// oauthd runs one CLI invocation as a separate process against db.
func oauthd(t *testing.T, db, stdin string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(oauthdBin, append([]string{"--db", db}, args...)...)
	cmd.Env = cleanEnv()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func mustOauthd(t *testing.T, db, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := oauthd(t, db, stdin, args...)
	if err != nil {
		t.Fatalf("oauthd %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
	}
	return out
}

func getJSON(t *testing.T, url string, v any) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: body is not JSON: %v", url, err)
	}
	return resp
}

func jwksKIDs(t *testing.T, base string) []string {
	t.Helper()
	var set struct {
		Keys []struct {
			KID string `json:"kid"`
		} `json:"keys"`
	}
	if resp := getJSON(t, base+"/.well-known/jwks.json", &set); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET jwks = %d", resp.StatusCode)
	}
	var kids []string
	for _, k := range set.Keys {
		kids = append(kids, k.KID)
	}
	slices.Sort(kids)
	return kids
}

func keyStates(t *testing.T, db string) map[string]string {
	t.Helper()
	var ks []struct{ KID, State string }
	oneJSON(t, mustOauthd(t, db, "", "keys", "list", "--json"), &ks)
	m := map[string]string{}
	for _, k := range ks {
		m[k.KID] = k.State
	}
	return m
}

func kidIn(states map[string]string, state string) string {
	for kid, s := range states {
		if s == state {
			return kid
		}
	}
	return ""
}

// TestServeWithCLI is issue 2's check: the real serve on a fresh database,
// with the CLI changing things while it runs, each effect visible over HTTP
// without a restart.
func TestServeWithCLI(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db)

	fi, err := os.Stat(db + ".sock")
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin socket = %v, %v; want a socket with mode 0600", fi, err)
	}

	// Health and metadata.
	var health map[string]string
	if resp := getJSON(t, s.base+"/healthz", &health); resp.StatusCode != 200 || health["status"] != "ok" {
		t.Errorf("/healthz = %d %v", resp.StatusCode, health)
	}
	var meta map[string]any
	if resp := getJSON(t, s.base+"/.well-known/oauth-authorization-server", &meta); resp.StatusCode != 200 || meta["issuer"] != s.base {
		t.Errorf("metadata = %d %v; want issuer %s", resp.StatusCode, meta, s.base)
	}
	if resp, err := http.Get(s.base + "/metrics"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/metrics = %v, %v", resp, err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, name := range []string{"oauthd_http_requests_total", "oauthd_store_wal_syncs_total",
			"oauthd_store_checkpoint_seconds_total"} {
			if !regexp.MustCompile(`(?m)^` + name + `[ {]`).Match(b) {
				t.Errorf("/metrics has no %s", name)
			}
		}
	}

	// The database is locked by serve: these go through the socket.
	mustOauthd(t, db, "correct horse battery\n", "users", "add", "--email", "dev@example.com", "--username", "dev", "--name", "Dev", "--password-stdin")
	var created map[string]any
	oneJSON(t, mustOauthd(t, db, "", "clients", "create", "--owner", "dev@example.com", "--name", "App",
		"--redirect-uri", "https://app.example/cb", "--scope", "PROFILE_READ", "--json"), &created)
	id, _ := created["client_id"].(string)
	if id == "" || created["status"] != "pending" {
		t.Fatalf("clients create = %v", created)
	}
	var sec map[string]string
	oneJSON(t, mustOauthd(t, db, "", "clients", "secrets", "generate", id, "--json"), &sec)
	if !strings.HasPrefix(sec["client_secret"], "oauthd_cs_") {
		t.Errorf("secrets generate = %v", sec)
	}
	_, errOut, err := oauthd(t, db, "", "clients", "secrets", "generate", id)
	if err == nil || !strings.Contains(errOut, "already has 2 active secrets; revoke one first") {
		t.Errorf("third secret: err %v, stderr %q; want a clear refusal", err, errOut)
	}

	// Rotation: a new kid appears, the old active stays (retired).
	before := keyStates(t, db)
	oldActive, oldNext := kidIn(before, "active"), kidIn(before, "next")
	if got, want := jwksKIDs(t, s.base), sortedKeys(before); !slices.Equal(got, want) {
		t.Fatalf("JWKS kids = %v; want %v", got, want)
	}
	mustOauthd(t, db, "", "keys", "rotate")
	after := keyStates(t, db)
	newNext := kidIn(after, "next")
	if after[oldActive] != "retired" || after[oldNext] != "active" || newNext == "" || newNext == oldNext {
		t.Fatalf("states after rotate = %v (before %v)", after, before)
	}
	kids := jwksKIDs(t, s.base)
	if !slices.Contains(kids, newNext) || !slices.Contains(kids, oldActive) || len(kids) != 3 {
		t.Errorf("JWKS after rotate = %v; want the new next %s and the retired %s too", kids, newNext, oldActive)
	}

	// Revocation: the kid leaves the JWKS at once.
	mustOauthd(t, db, "", "keys", "revoke", "--", oldActive)
	if kids := jwksKIDs(t, s.base); slices.Contains(kids, oldActive) || len(kids) != 2 {
		t.Errorf("JWKS after revoke = %v; want %s gone", kids, oldActive)
	}

	// The server is still the one that started, and keeps working.
	if s.cmd.ProcessState != nil {
		t.Fatal("serve exited")
	}
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestServeSIGTERM(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db, "--demo")
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("serve after SIGTERM: %v; want exit 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not exit within 15s of SIGTERM")
	}
	if _, err := os.Stat(db + ".sock"); !os.IsNotExist(err) {
		t.Errorf("admin socket still there after exit: %v", err)
	}
	// The file is closed: the CLI opens it directly now.
	if out := mustOauthd(t, db, "", "clients", "list"); !strings.Contains(out, "Demo Calendar App") {
		t.Errorf("clients list after serve --demo = %q", out)
	}
}

func TestServeDemoIsIdempotent(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	for range 2 {
		s := startServe(t, db, "--demo")
		s.cmd.Process.Signal(syscall.SIGTERM)
		if err := <-s.done; err != nil {
			t.Fatalf("serve --demo: %v", err)
		}
	}
	var cs []map[string]any
	oneJSON(t, mustOauthd(t, db, "", "clients", "list", "--json"), &cs)
	if len(cs) != 1 || cs[0]["status"] != "approved" || len(cs[0]["secrets"].([]any)) != 1 {
		t.Errorf("clients after two demo runs = %v; want one approved client with one secret", cs)
	}
	var us []map[string]any
	oneJSON(t, mustOauthd(t, db, "", "users", "list", "--json"), &us)
	if len(us) != 1 || us[0]["email"] != "demo@example.com" {
		t.Errorf("users after two demo runs = %v", us)
	}
}

func TestLockedWithoutSocket(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db)
	// Hide the socket: the file stays locked but nobody answers.
	if err := os.Rename(db+".sock", db+".hidden"); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := oauthd(t, db, "", "clients", "list")
	if err == nil || !strings.Contains(errOut, "is locked by another process but no admin socket answers") {
		t.Errorf("clients list on a locked database: %v, %q", err, errOut)
	}
	os.Rename(db+".hidden", db+".sock")
	s.cmd.Process.Signal(syscall.SIGTERM)
	<-s.done
}
