package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
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
	"oauthd/keys/verify/dpoptest"
)

// oauth4webapiDir prepares the independent client (npm package
// oauth4webapi, version pinned by testdata/oauth4webapi/package-lock.json).
func oauth4webapiDir(t *testing.T) string {
	t.Helper()
	return npmClientDir(t, "oauth4webapi")
}

// npmClientDir prepares the node client testdata/<name> (client.mjs, with
// its npm dependencies pinned by package-lock.json) in a cache directory
// keyed by those files, running `npm ci` once. It skips the test when
// node or npm is missing, except in CI (CI=true), where that is a
// failure.
func npmClientDir(t *testing.T, name string) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required in CI for the %s end-to-end test: %v", tool, name, err)
			}
			t.Skipf("skipping the %s end-to-end test: %s is not installed", name, tool)
		}
	}
	src := filepath.Join("testdata", name)
	h := sha256.New()
	files := []string{"package.json", "package-lock.json", "client.mjs"}
	if _, err := os.Stat(filepath.Join(src, "server.mjs")); err == nil {
		files = append(files, "server.mjs") // a node server beside the client (mcp-sdk)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "oauthd-test", name+"-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
		return dir
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "tmp-")
	if err != nil {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if tmp, err = os.MkdirTemp(filepath.Dir(dir), "tmp-"); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		b, _ := os.ReadFile(filepath.Join(src, f))
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		t.Fatalf("npm ci (%s): %v\n%s", name, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp) // another test process won the race: use its copy
	}
	return dir
}

// nodeClient is the running client.mjs.
// startNode runs dir's client.mjs with node and env (besides the
// environment), for at most two minutes: the client of a node library
// that the test drives line by line (JSON on its stdin and stdout). Its
// stderr is shown when the test fails; name says whose it is.
func startNode(t *testing.T, dir, name string, env ...string) *nodeClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel) // after the Wait below (cleanups run last-in first-out)
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "client.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil && !t.Failed() {
			t.Errorf("%s: %v\n%s", name, err, stderr.String())
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, stderr.String())
		}
	})
	sc := bufio.NewScanner(outPipe)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	return &nodeClient{in: in, out: sc, t: t}
}

type nodeClient struct {
	in  io.WriteCloser
	out *bufio.Scanner
	t   *testing.T
}

func (n *nodeClient) read(v any) {
	n.t.Helper()
	if !n.out.Scan() {
		n.t.Fatalf("oauth4webapi client ended early: %v", n.out.Err())
	}
	if err := json.Unmarshal(n.out.Bytes(), v); err != nil {
		n.t.Fatalf("oauth4webapi client said %q: %v", n.out.Text(), err)
	}
}

// TestOAuth4WebAPIDPoPAndPAR is the check with an independent
// client library: oauth4webapi pushes the authorization request (PAR),
// the browser part (login, consent) runs through consenttest.Browser,
// then oauth4webapi exchanges the code with a DPoP proof, calls /v2/me and
// the gateway with proofs, and refreshes with a proof. Then, as an
// attacker: the stolen DPoP-bound access token without the key is refused
// at /v2/me and at the gateway (as Bearer, and as DPoP with a proof of
// another key); a replayed proof is refused; the refresh token without a
// proof by the key is refused; the request_uri cannot be used again.
func TestOAuth4WebAPIDPoPAndPAR(t *testing.T) {
	dir := oauth4webapiDir(t)
	for _, alg := range []string{"ES256", "EdDSA"} {
		t.Run(alg, func(t *testing.T) { runOAuth4WebAPI(t, dir, alg) })
	}
}

func runOAuth4WebAPI(t *testing.T, dir, alg string) {
	e := startE2E(t)
	id, _ := e.client(t, e2eRedirect, []string{"PROFILE_READ"}, "--public")
	// The strict settings: DPoP and PAR required for this client.
	e.cli(t, "clients", "set", id, "--dpop-bound-access-tokens=true", "--require-par=true")
	up := &upstreamStub{}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	gw := startGatewayProcess(t, upSrv.URL, e.base)

	ctx := t.Context()
	node := startNode(t, dir, "oauth4webapi client", "ISSUER="+e.base, "CLIENT_ID="+id, "REDIRECT_URI="+e2eRedirect,
		"GATEWAY_URL="+gw, "DPOP_ALG="+alg)

	// 1. PAR → the authorization URL carries client_id and request_uri only.
	var step1 struct {
		Step      string `json:"step"`
		URL       string `json:"url"`
		ExpiresIn int    `json:"expires_in"`
	}
	node.read(&step1)
	if step1.Step != "authorize" || !strings.Contains(step1.URL, "request_uri=urn%3Aietf%3Aparams%3Aoauth%3Arequest_uri%3A") ||
		strings.Contains(step1.URL, "redirect_uri") || step1.ExpiresIn != 60 {
		t.Fatalf("PAR step: %+v", step1)
	}
	// A plain authorization request of this client is refused (PAR required).
	b := consenttest.New()
	plain := e.base + "/auth/oauth2/authorize?response_type=code&client_id=" + id + "&redirect_uri=" + e2eRedirect +
		"&scope=PROFILE_READ&code_challenge=" + strings.Repeat("a", 43) + "&code_challenge_method=S256"
	if got, err := b.Authorize(ctx, plain, e2eEmail, e2ePassword, true); err == nil {
		t.Fatalf("an authorization request without PAR reached %s", got)
	}

	// 2. Login and consent (the browser part), then the callback to node.
	b = consenttest.New()
	cb, err := b.Authorize(ctx, step1.URL, e2eEmail, e2ePassword, true)
	if err != nil {
		t.Fatalf("authorize with request_uri: %v", err)
	}
	line, _ := json.Marshal(map[string]string{"callback": cb.String()})
	fmt.Fprintf(node.in, "%s\n", line)

	// The request_uri is single-use: a second authorization with it fails.
	if got, err := consenttest.New().Authorize(ctx, step1.URL, e2eEmail, e2ePassword, true); err == nil {
		t.Fatalf("a used request_uri reached %s", got)
	}

	// 3. What oauth4webapi saw.
	type recorded struct {
		URL, Method, DPoP, Authorization string
	}
	type call struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}
	var done struct {
		Step                 string `json:"step"`
		TokenType            string `json:"token_type"`
		AccessToken          string `json:"access_token"`
		RefreshToken         string `json:"refresh_token"`
		RefreshedAccessToken string `json:"refreshed_access_token"`
		RefreshedTokenType   string `json:"refreshed_token_type"`
		Me, Gateway, Me2     call
		MeRequest            recorded `json:"me_request"`
		GatewayRequest       recorded `json:"gateway_request"`
	}
	node.read(&done)
	if done.Step != "done" || !strings.EqualFold(done.TokenType, "DPoP") || !strings.EqualFold(done.RefreshedTokenType, "DPoP") {
		t.Fatalf("token types: %+v", done)
	}
	for name, c := range map[string]call{"/v2/me": done.Me, "gateway": done.Gateway, "/v2/me after refresh": done.Me2} {
		if c.Status != http.StatusOK {
			t.Errorf("%s with DPoP = %d %s", name, c.Status, c.Body)
		}
	}
	if !strings.Contains(done.Me.Body, `"email":"`+e2eEmail+`"`) {
		t.Errorf("/v2/me body %s", done.Me.Body)
	}
	claims, _ := e.verifyJWT(t, ctx, done.AccessToken)
	cnf, _ := claims["cnf"].(map[string]any)
	if jkt, _ := cnf["jkt"].(string); len(jkt) != 43 {
		t.Fatalf("access token cnf = %v", claims["cnf"])
	}

	// 4. The attacker. A stolen bound token without the key:
	tok := done.RefreshedAccessToken
	for _, base := range []string{e.base, gw} {
		status, body := e2eGet(t, base+"/v2/me", tok, nil) // as Bearer
		if status != http.StatusUnauthorized || !strings.Contains(body, "invalid_token") {
			t.Errorf("%s/v2/me with the stolen token as Bearer = %d %s", base, status, body)
		}
		other := dpoptest.NewES256()
		res := dpopGet(t, base+"/v2/me", tok, other.Proof("GET", base+"/v2/me", tok))
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.Header.Get("WWW-Authenticate"), `DPoP error="invalid_dpop_proof"`) {
			t.Errorf("%s/v2/me with the stolen token and another key's proof = %d %v", base, res.StatusCode, res.Header)
		}
		res = dpopGet(t, base+"/v2/me", tok, "")
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s/v2/me with the stolen token and no proof = %d", base, res.StatusCode)
		}
	}
	// A replayed proof (the one oauth4webapi sent to /v2/me) is refused.
	if done.MeRequest.DPoP == "" || !strings.HasPrefix(done.MeRequest.Authorization, "DPoP ") {
		t.Fatalf("recorded /v2/me request: %+v", done.MeRequest)
	}
	res := dpopGet(t, e.base+"/v2/me", strings.TrimPrefix(done.MeRequest.Authorization, "DPoP "), done.MeRequest.DPoP)
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.Header.Get("WWW-Authenticate"), `error="invalid_dpop_proof"`) {
		t.Errorf("replayed proof at /v2/me = %d %v", res.StatusCode, res.Header)
	}
	// And at the gateway, whose verifier has the token cached by now: the
	// proof is still checked, and its jti was used.
	if done.GatewayRequest.DPoP == "" || done.GatewayRequest.URL != gw+"/v2/me" {
		t.Fatalf("recorded gateway request: %+v", done.GatewayRequest)
	}
	res = dpopGet(t, gw+"/v2/me", strings.TrimPrefix(done.GatewayRequest.Authorization, "DPoP "), done.GatewayRequest.DPoP)
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.Header.Get("WWW-Authenticate"), `error="invalid_dpop_proof"`) {
		t.Errorf("replayed proof at the gateway = %d %v", res.StatusCode, res.Header)
	}
	// The refresh token without a proof by the key is worth nothing.
	r := e2ePost(t, e.tokenURL(), url.Values{"grant_type": {"refresh_token"}, "refresh_token": {done.RefreshToken}, "client_id": {id}}, "", "")
	if r.Status != http.StatusBadRequest || r.str("error") != "invalid_dpop_proof" {
		t.Errorf("refresh without a proof = %d %v", r.Status, r.Body)
	}
	other := dpoptest.NewES256()
	r = e2ePostHeader(t, e.tokenURL(), url.Values{"grant_type": {"refresh_token"}, "refresh_token": {done.RefreshToken}, "client_id": {id}},
		http.Header{"DPoP": {other.Proof("POST", e.tokenURL(), "")}})
	if r.Status != http.StatusBadRequest || r.str("error") != "invalid_grant" {
		t.Errorf("refresh with another key's proof = %d %v", r.Status, r.Body)
	}
}

// dpopGet is GET u with Authorization: DPoP tok and the proof (none when "").
func dpopGet(t *testing.T, u, tok, proof string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", "DPoP "+tok)
	if proof != "" {
		req.Header.Set("DPoP", proof)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// e2ePostHeader posts the form vals to u with extra headers.
func e2ePostHeader(t *testing.T, u string, vals url.Values, h http.Header) e2eTokenResponse {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(vals.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, vs := range h {
		req.Header[k] = vs
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body := map[string]any{}
	json.NewDecoder(res.Body).Decode(&body)
	return e2eTokenResponse{Status: res.StatusCode, Header: res.Header, Body: body}
}
