package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/oauth2/clientcredentials"
)

// TestOAuth4WebAPIPrivateKeyJWT: a certified client library (oauth4webapi,
// PrivateKeyJwt) makes a key pair, the operator registers its public JWK
// set with `clients create --jwks FILE --grant-type client_credentials`,
// and the library gets two client_credentials tokens with assertions it
// signed (a new jti each time). The tokens name the client, no user.
func TestOAuth4WebAPIPrivateKeyJWT(t *testing.T) {
	dir := npmClientDir(t, "oauth4webapi-pkjwt")
	e := startE2E(t)
	node := startNode(t, dir, "oauth4webapi private_key_jwt client", "ISSUER="+e.base)
	var step1 struct {
		Step string          `json:"step"`
		JWKS json.RawMessage `json:"jwks"`
	}
	node.read(&step1)
	if step1.Step != "jwks" {
		t.Fatalf("first step: %+v", step1)
	}
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, step1.JWKS, 0o600); err != nil {
		t.Fatal(err)
	}
	id, secret := e.client(t, e2eRedirect, []string{"BOOKING_READ"}, "--grant-type", "client_credentials", "--jwks", file)
	if secret != "" {
		t.Fatalf("a keyed client got a secret")
	}
	fmt.Fprintf(node.in, `{"client_id":%q}`+"\n", id)
	var done struct {
		Step   string `json:"step"`
		Tokens []struct {
			AccessToken  string  `json:"access_token"`
			TokenType    string  `json:"token_type"`
			Scope        string  `json:"scope"`
			RefreshToken *string `json:"refresh_token"`
		} `json:"tokens"`
	}
	node.read(&done)
	if done.Step != "done" || len(done.Tokens) != 2 {
		t.Fatalf("done: %+v", done)
	}
	for _, tok := range done.Tokens {
		if !strings.EqualFold(tok.TokenType, "bearer") || tok.Scope != "BOOKING_READ" || tok.RefreshToken != nil {
			t.Errorf("token = %+v", tok)
		}
		claims, _ := e.verifyJWT(t, t.Context(), tok.AccessToken)
		if claims["sub"] != id || claims["client_id"] != id || claims["grant_id"] != nil {
			t.Errorf("claims = %v; want sub = client_id = %s, no grant_id", claims, id)
		}
	}
}

// TestClientCredentialsEndToEnd: a backend registered with
// `clients create --grant-type client_credentials` gets a token with
// golang.org/x/oauth2/clientcredentials from the binary; the gateway
// forwards it with X-Oauthd-Subject-Type: client and no user ID (a forged
// one is stripped); /v2/me answers 403 insufficient_scope; the secret's
// revocation stops new tokens at once.
func TestClientCredentialsEndToEnd(t *testing.T) {
	e := startE2E(t)
	up := &upstreamStub{}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	gw := startGatewayProcess(t, upSrv.URL, e.base)

	var c struct {
		ClientID     string   `json:"client_id"`
		ClientSecret string   `json:"client_secret"`
		SecretID     string   `json:"secret_id"`
		GrantTypes   []string `json:"grant_types"`
	}
	oneJSON(t, e.cli(t, "clients", "create", "--owner", e2eEmail, "--name", "Nightly sync", "--grant-type", "client_credentials",
		"--scope", "BOOKING_READ,PROFILE_READ", "--json"), &c)
	if len(c.GrantTypes) != 1 || c.GrantTypes[0] != "client_credentials" {
		t.Fatalf("clients create = %+v", c)
	}
	e.cli(t, "clients", "approve", c.ClientID)
	cfg := clientcredentials.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, TokenURL: e.base + "/v2/auth/oauth2/token"}
	tok, err := cfg.Token(t.Context())
	if err != nil || tok.RefreshToken != "" {
		t.Fatalf("token = %+v, %v", tok, err)
	}

	req, _ := http.NewRequest(http.MethodGet, gw+"/v2/bookings", nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("X-Oauthd-User-Id", "1") // forged: stripped
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	seen := up.take()
	if res.StatusCode != http.StatusOK || len(seen) != 1 {
		t.Fatalf("gateway: %d, upstream saw %d", res.StatusCode, len(seen))
	}
	h := seen[0].Header
	if h.Get("X-Oauthd-Subject-Type") != "client" || h.Get("X-Oauthd-Client-Id") != c.ClientID || len(h.Values("X-Oauthd-User-Id")) != 0 {
		t.Errorf("upstream headers = %v; want subject type client, the client ID, no user ID", h)
	}

	status, body := e2eGet(t, e.base+"/v2/me", tok.AccessToken, nil)
	if status != http.StatusForbidden || !strings.Contains(body, "insufficient_scope") || !strings.Contains(body, "acts for no user") {
		t.Errorf("/v2/me = %d %s; want 403 insufficient_scope (no user)", status, body)
	}

	// A second secret, then the first revoked: the first stops at once.
	var s2 struct {
		ClientSecret string `json:"client_secret"`
	}
	oneJSON(t, e.cli(t, "clients", "secrets", "generate", c.ClientID, "--json"), &s2)
	e.cli(t, "clients", "secrets", "revoke", c.ClientID, c.SecretID)
	if _, err := cfg.Token(t.Context()); err == nil {
		t.Errorf("a revoked secret still got a token")
	}
	cfg.ClientSecret = s2.ClientSecret
	if _, err := cfg.Token(t.Context()); err != nil {
		t.Errorf("new secret: %v", err)
	}
}
