package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// TestGatewayProtectedResource: RFC 9728 at the gateway: the documents at
// the well-known path and its path-suffixed form, the challenges that
// point to them (with the route's scopes), and --audience given twice.
// The attacker's try: a token for resource A at the gateway of resource B.
func TestGatewayProtectedResource(t *testing.T) {
	ti := newTestIssuer(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "upstream") }))
	defer up.Close()
	const pub = "https://api.example.com"
	const mcp = pub + "/mcp"
	gw := startGateway(t, "--upstream", up.URL, "--issuer", ti.srv.URL, "--public-url", pub,
		"--audience", mcp, "--audience", ti.srv.URL)

	get := func(path, token string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", gw+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	type doc struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		Scopes               []string `json:"scopes_supported"`
		Bearer               []string `json:"bearer_methods_supported"`
		DPoP                 []string `json:"dpop_signing_alg_values_supported"`
	}
	for path, want := range map[string]string{"/.well-known/oauth-protected-resource": pub, "/.well-known/oauth-protected-resource/mcp": mcp} {
		resp := get(path, "")
		var d doc
		if err := json.NewDecoder(resp.Body).Decode(&d); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d, %v", path, resp.StatusCode, err)
		}
		if d.Resource != want || !slices.Equal(d.AuthorizationServers, []string{ti.srv.URL}) || !slices.Contains(d.Scopes, "PROFILE_READ") ||
			!slices.Equal(d.Bearer, []string{"header"}) || !slices.Contains(d.DPoP, "ES256") {
			t.Errorf("GET %s = %+v; want resource %s, the issuer, the table's scopes, header, DPoP algs", path, d, want)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
	}
	if resp := get("/.well-known/oauth-protected-resource/other", ""); resp.StatusCode == 200 {
		t.Error("a document for a resource the gateway does not accept tokens for")
	}

	rootMeta := `resource_metadata="` + pub + `/.well-known/oauth-protected-resource"`
	mcpMeta := `resource_metadata="` + pub + `/.well-known/oauth-protected-resource/mcp"`
	forA := ti.token(t, jwt.MapClaims{"scope": "PROFILE_READ", "aud": "https://calendar.example.com/"})
	forB := ti.token(t, jwt.MapClaims{"scope": "PROFILE_READ", "aud": mcp})
	forIssuer := ti.token(t, jwt.MapClaims{"scope": "PROFILE_READ"})
	for _, tc := range []struct {
		name, path, token string
		status            int
		www               string
	}{
		{"no token, scoped route", "/v2/me", "", 401, `Bearer ` + rootMeta + `, scope="PROFILE_READ"`},
		{"no token, under the MCP resource", "/mcp", "", 401, `Bearer ` + mcpMeta},
		{"token for resource A at the gateway of B", "/v2/me", forA, 401,
			`Bearer error="invalid_token", error_description="the access token is invalid, expired or not signed by the issuer", ` + rootMeta + `, scope="PROFILE_READ"`},
		{"token for B", "/v2/me", forB, 200, ""},
		{"token for the issuer (second --audience)", "/v2/me", forIssuer, 200, ""},
		{"step-up", "/v2/teams", forB, 403, `Bearer error="insufficient_scope", scope="TEAM_PROFILE_READ", ` + rootMeta},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := get(tc.path, tc.token)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d; want %d", resp.StatusCode, tc.status)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != tc.www {
				t.Errorf("WWW-Authenticate\n got %s\nwant %s", got, tc.www)
			}
		})
	}
}

// TestGatewayNoPublicURLNoDocument: without --public-url the gateway does
// not know its URL: no document, and the challenges stay RFC 6750's.
func TestGatewayNoPublicURLNoDocument(t *testing.T) {
	ti := newTestIssuer(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) }))
	defer up.Close()
	gw := startGateway(t, "--upstream", up.URL, "--issuer", ti.srv.URL)
	resp, err := http.Get(gw + "/v2/me")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if www := resp.Header.Get("WWW-Authenticate"); www != "Bearer" {
		t.Errorf("WWW-Authenticate %q; want a bare Bearer", www)
	}
}
