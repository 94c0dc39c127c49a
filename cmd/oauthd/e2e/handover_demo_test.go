package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"oauthd/consent/consenttest"
)

// freePort is a TCP port on 127.0.0.1 free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestHandoverDemoScript runs scripts/handover-demo.sh, docs/LOGIN-HANDOVER.md's
// "try it on one machine", as a reader does, and follows what it prints:
// the authorization URL through the platform's login to a code, the curl
// that exchanges it, /v2/me as the platform's user. The same link opened on
// the base URL's host instead is refused with a page that names the
// address to use. Ctrl-C stops both servers and removes the script's
// directory.
func TestHandoverDemoScript(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is missing; scripts/handover-demo.sh needs it")
		}
		t.Skip("skipping: curl is not installed (scripts/handover-demo.sh needs it)")
	}
	servePort, platformPort := freePort(t), freePort(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "../../../scripts/handover-demo.sh")
	cmd.Env = append(cleanEnv(), "SERVE_PORT="+strconv.Itoa(servePort), "PLATFORM_PORT="+strconv.Itoa(platformPort))
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 20 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cmd.Process.Signal(syscall.SIGINT)
			cmd.Wait()
		}
	}
	defer stop()

	var authURL, exchange string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && exchange == "" {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "http://localhost:"):
			authURL = line
		case strings.HasPrefix(line, "curl "):
			exchange = line
		}
	}
	if authURL == "" || exchange == "" {
		stop()
		t.Fatalf("scripts/handover-demo.sh printed no authorization URL and exchange command:\n%s", &stderr)
	}
	go func() { // the rest of stdout, so that the script never blocks on it
		for sc.Scan() {
		}
	}()
	base := "http://127.0.0.1:" + strconv.Itoa(servePort)
	platURL := "http://127.0.0.1:" + strconv.Itoa(platformPort)

	// signIn opens authURL in a new browser and signs in at the platform;
	// it returns where the browser ends and that page.
	signIn := func(authURL string) (http.CookieJar, int, *url.URL, string) {
		jar := newJar(t)
		status, at, body := browse(t, jar, http.MethodGet, authURL, nil)
		if status != http.StatusOK || !strings.HasPrefix(at.String(), platURL+"/login?") {
			t.Fatalf("the script's authorization URL: %d at %s; want the platform's login form\n%s", status, at, body)
		}
		q := at.Query()
		status, at, body = browse(t, jar, http.MethodPost, platURL+"/login", url.Values{
			"return_to": {q.Get("return_to")}, "challenge": {q.Get("challenge")},
			"email": {"pat@platform.example"}, "password": {"platform password"}})
		return jar, status, at, body
	}
	jar, status, at, body := signIn(authURL)
	if status != http.StatusOK || at.Host != "localhost:"+strconv.Itoa(servePort) || at.Path != "/auth/oauth2/authorize" {
		t.Fatalf("after the platform's login: %d at %s; want oauthd's consent page on the app URL\n%s", status, at, body)
	}
	b := consenttest.New()
	b.Client.Jar = jar
	loc, err := b.Authorize(ctx, authURL, "", "", true)
	if err != nil || loc.Query().Get("code") == "" || loc.Query().Get("state") != "demo" {
		t.Fatalf("consent = %v, %v; want the callback with a code", loc, err)
	}
	out, err := exec.CommandContext(ctx, "bash", "-c", strings.Replace(exchange, "PASTE_CODE_HERE", loc.Query().Get("code"), 1)).Output()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err != nil || json.Unmarshal(out, &tok) != nil || tok.AccessToken == "" {
		t.Fatalf("the printed exchange command: %v\n%s", err, out)
	}
	status, me := e2eGet(t, base+"/v2/me", tok.AccessToken, nil)
	if status != http.StatusOK || !strings.Contains(me, `"email":"pat@platform.example"`) {
		t.Fatalf("/v2/me = %d %s; want the platform's user", status, me)
	}

	// The same link on the base URL's host: the sign-in's cookie stays
	// there, and the answer on the app URL's host says what to do.
	onBase := strings.Replace(authURL, "http://localhost:", "http://127.0.0.1:", 1)
	_, status, _, body = signIn(onBase)
	if status != http.StatusBadRequest || !strings.Contains(body, "did not start this sign-in") ||
		!strings.Contains(body, "started at 127.0.0.1:"+strconv.Itoa(servePort)) {
		t.Errorf("a sign-in started on the base URL's host: %d\n%s\nwant 400 naming the address to use", status, body)
	}

	stop()
	if conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(servePort), time.Second); err == nil {
		conn.Close()
		t.Error("serve still listens after Ctrl-C to the script")
	}
	if m := regexp.MustCompile(`building oauthd and the platform example in (\S+)`).FindStringSubmatch(stderr.String()); m == nil {
		t.Errorf("the script did not say where it works:\n%s", &stderr)
	} else if _, err := os.Stat(m[1]); err == nil {
		t.Errorf("the script left %s behind", m[1])
	}
}

// TestHandoverDemoDoc: the commands docs/LOGIN-HANDOVER.md shows for the
// one-machine try are the ones scripts/handover-demo.sh runs, with its
// default ports.
func TestHandoverDemoDoc(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/LOGIN-HANDOVER.md")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("../../../scripts/handover-demo.sh")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "scripts/handover-demo.sh")
	_, rest, ok2 := strings.Cut(rest, "```sh\n")
	block, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/LOGIN-HANDOVER.md has no sh block after naming scripts/handover-demo.sh")
	}
	// The script's commands with its variables at their defaults, one
	// line each, without quotes and redirections.
	run := strings.NewReplacer(
		"$platform_port", "9090", "$oauthd_port", "8080",
		"$platform", "http://127.0.0.1:9090", "$base", "http://127.0.0.1:8080", "$app", "http://localhost:8080",
		`"`, "", " 2>platform.log", "", " 2>serve.log", "", "\\\n", " ",
	).Replace(string(script))
	run = regexp.MustCompile(`[ \t]+`).ReplaceAllString(run, " ")
	cmds := 0
	for _, cmd := range strings.Split(strings.ReplaceAll(block, "\\\n", " "), "\n") {
		cmd = regexp.MustCompile(`\s+`).ReplaceAllString(strings.TrimSpace(cmd), " ")
		if cmd == "" || strings.HasPrefix(cmd, "#") {
			continue
		}
		cmds++
		if !strings.Contains(run, cmd) {
			t.Errorf("docs/LOGIN-HANDOVER.md shows `%s`, which scripts/handover-demo.sh does not run", cmd)
		}
	}
	if cmds != 2 {
		t.Errorf("found %d commands in the doc's block; want the platform's and serve's", cmds)
	}
}
