package e2e

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"oauthd/consent/consenttest"
)

// freePort returns a loopback port free a moment ago (the gateway's
// resource identifier must be known before serve starts).
// startMCPServer runs the SDK's MCP server (testdata/mcp-sdk/server.mjs)
// and returns its base URL.
func startMCPServer(t *testing.T, dir string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "server.mjs"))
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			t.Logf("mcp server stderr:\n%s", stderr.String())
		}
	})
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatalf("mcp server did not start: %s", stderr.String())
	}
	var p struct{ Port int }
	if err := json.Unmarshal(sc.Bytes(), &p); err != nil || p.Port == 0 {
		t.Fatalf("mcp server said %q", sc.Text())
	}
	return fmt.Sprintf("http://127.0.0.1:%d", p.Port)
}

// startMCPGateway runs `oauthd gateway` in front of the MCP server.
func startMCPGateway(t *testing.T, listen, upstream, issuer, publicURL, audience, routes string, extra ...string) string {
	t.Helper()
	cmd := exec.Command(oauthdBin, append([]string{"gateway", "--listen", listen, "--upstream", upstream, "--issuer", issuer,
		"--public-url", publicURL, "--audience", audience, "--routes", routes}, extra...)...)
	addr, _ := startProcess(t, cmd, "gateway", gatewayListenRE, nil)
	return "http://" + addr
}

// TestMCPSDKEndToEnd is issue 32's check with the official MCP TypeScript
// SDK: its client's own auth() discovers oauthd from the gateway's 401
// (RFC 9728), identifies itself with a client ID metadata document that
// the test serves over HTTPS (its CA given to oauthd through
// SSL_CERT_FILE), sends resource (RFC 8707) and PKCE; the test plays the
// user on the login and consent pages; a tool call of the SDK's MCP server
// behind the gateway succeeds. Then: the token's aud is the gateway's
// resource, and a gateway of another resource refuses it; after Remove
// access the next call is refused within the feed interval; a document on a
// host the operator has not allowed ends on the error page and stores
// nothing.
func TestMCPSDKEndToEnd(t *testing.T) {
	dir := npmClientDir(t, "mcp-sdk")
	ctx := t.Context()

	// The assistant's host: its client ID metadata document over HTTPS.
	const callback = "http://127.0.0.1/callback"
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/oauth/client.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		json.NewEncoder(w).Encode(map[string]any{"client_id": "https://" + r.Host + r.URL.Path, "client_name": "E2E Assistant",
			"redirect_uris": []string{callback}, "token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"}})
	}))
	t.Cleanup(docs.Close)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: docs.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", caFile)
	docHost := strings.TrimPrefix(docs.URL, "https://")
	docURL := docs.URL + "/oauth/client.json"

	gwPort := fmt.Sprint(freePort(t))
	gwPublic := "http://127.0.0.1:" + gwPort
	resource := gwPublic + "/v2/mcp"
	db := filepath.Join(t.TempDir(), "o.db")
	s := startServe(t, db, "--resource", resource, "--client-metadata-private-networks")
	mustOauthd(t, db, e2ePassword+"\n", "users", "add", "--email", e2eEmail, "--username", e2eUsername,
		"--name", e2eName, "--password-stdin")
	mustOauthd(t, db, "", "agents", "allow", docHost, "--scope", "PROFILE_READ,BOOKING_READ")

	mcp := startMCPServer(t, dir)
	routes := filepath.Join(t.TempDir(), "routes.json")
	os.WriteFile(routes, []byte(`[{"method":"POST","path":"/v2/mcp","scopes":["PROFILE_READ"]},{"method":"GET","path":"/v2/mcp","scopes":["PROFILE_READ"]},{"method":"DELETE","path":"/v2/mcp","scopes":["PROFILE_READ"]}]`), 0o600)
	gw := startMCPGateway(t, "127.0.0.1:"+gwPort, mcp, s.base, gwPublic, resource, routes,
		"--revocation-feed-url", s.base+"/.well-known/revoked-grants", "--revocation-feed-interval", "1s")

	node := startNode(t, dir, "mcp sdk client", "MCP_URL="+gw+"/v2/mcp", "CLIENT_METADATA_URL="+docURL, "REDIRECT_URI=http://127.0.0.1:9/callback")
	var step struct {
		Step        string `json:"step"`
		URL         string `json:"url"`
		Text        string `json:"text"`
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
	}
	node.read(&step)
	if step.Step != "authorize" {
		t.Fatalf("first step %+v; want authorize", step)
	}
	au, _ := url.Parse(step.URL)
	if q := au.Query(); q.Get("client_id") != docURL || q.Get("resource") != resource || q.Get("code_challenge_method") != "S256" ||
		q.Get("scope") != "PROFILE_READ" {
		t.Errorf("the SDK's authorization request %s; want the document's URL as client_id, the gateway's resource, PKCE and the route's scope", step.URL)
	}
	if _, err := os.Stat(db); err != nil {
		t.Fatal(err)
	}
	if out := mustOauthd(t, db, "", "clients", "list", "--json"); strings.Contains(out, docURL) {
		t.Errorf("a client was stored before consent: %s", out)
	}
	cb, err := consenttest.New().Authorize(ctx, step.URL, e2eEmail, e2ePassword, true)
	if err != nil {
		t.Fatalf("login and consent: %v", err)
	}
	line, _ := json.Marshal(map[string]string{"callback": cb.String()})
	fmt.Fprintf(node.in, "%s\n", line)
	node.read(&step)
	if step.Step != "tool" || !strings.Contains(step.Text, `"scopes":"PROFILE_READ"`) || !strings.Contains(step.Text, `"user":"1"`) {
		t.Fatalf("tool call: %+v", step)
	}
	// The token's aud is the gateway's resource.
	parts := strings.Split(step.AccessToken, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Aud any `json:"aud"`
	}
	json.Unmarshal(payload, &claims)
	if claims.Aud != resource {
		t.Errorf("aud = %v; want %s", claims.Aud, resource)
	}
	// A gateway of another resource refuses it.
	other := startMCPGateway(t, "127.0.0.1:0", mcp, s.base, "https://calendar.example.com", "https://calendar.example.com/", routes)
	req, _ := http.NewRequestWithContext(ctx, "POST", other+"/v2/mcp", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+step.AccessToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("token for %s at the gateway of another resource: %d %q; want 401 invalid_token", resource, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}

	// Remove access (what the Connected apps page does): the next call is
	// refused within the revoked-grants feed's interval.
	mustOauthd(t, db, "", "users", "apps", "revoke", e2eEmail, docURL)
	removed := time.Now()
	for {
		fmt.Fprintf(node.in, "%s\n", `{"again":true}`)
		var again struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		node.read(&again)
		if !again.OK {
			t.Logf("refused %s after Remove access: %s", time.Since(removed).Round(time.Millisecond), again.Error)
			break
		}
		if time.Since(removed) > 5*time.Second {
			t.Fatalf("the tool call still succeeds %s after Remove access", time.Since(removed))
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A host not allowed: the error page, and nothing stored.
	before := mustOauthd(t, db, "", "clients", "list", "--json")
	notAllowed := strings.Replace(docURL, "127.0.0.1", "localhost", 1)
	q := url.Values{"response_type": {"code"}, "client_id": {notAllowed}, "redirect_uri": {"http://127.0.0.1:9/callback"},
		"scope": {"PROFILE_READ"}, "code_challenge": {strings.Repeat("a", 43)}, "code_challenge_method": {"S256"}}
	status, body := e2eGet(t, s.base+"/auth/oauth2/authorize?"+q.Encode(), "", nil)
	if status != http.StatusBadRequest || !strings.Contains(body, "not available on this platform") {
		t.Errorf("host not allowed: %d %s", status, body)
	}
	if after := mustOauthd(t, db, "", "clients", "list", "--json"); after != before {
		t.Errorf("the store changed for a host not allowed:\n%s\n%s", before, after)
	}
}
