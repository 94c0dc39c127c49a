package guard

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"oauthd/data/oauth"
	"oauthd/data/scope"
	"oauthd/keys/verify"
)

var errFakeInvalid = errors.New("fake: invalid token")

// fakeVerifier accepts tokens of the form "scopes.A.B" (a token granting
// scopes A and B; "scopes" alone grants none) and "unrestricted". Every
// other token is invalid.
type fakeVerifier struct{}

func (fakeVerifier) Verify(_ context.Context, token string) (*verify.Claims, error) {
	switch {
	case token == "unrestricted":
		return &verify.Claims{Subject: "7", ClientID: "legacy", Unrestricted: true}, nil
	case strings.HasPrefix(token, "machine."): // client_credentials: sub is the client ID
		return &verify.Claims{Subject: "sync-job", ClientID: "sync-job", Scopes: strings.Split(token[len("machine."):], ".")}, nil
	case token == "scopes":
		return &verify.Claims{Subject: "7", ClientID: "app", Scopes: []string{}}, nil
	case strings.HasPrefix(token, "scopes."):
		return &verify.Claims{Subject: "7", ClientID: "app", Scopes: strings.Split(token[len("scopes."):], ".")}, nil
	}
	return nil, errFakeInvalid
}

func tokenFor(scopes ...string) string {
	if len(scopes) == 0 {
		return "scopes"
	}
	return "scopes." + strings.Join(scopes, ".")
}

func allScopesExcept(exclude ...string) []string {
	var out []string
	for _, s := range scope.All() {
		if !slices.Contains(exclude, s.Name) {
			out = append(out, s.Name)
		}
	}
	return out
}

// concrete turns a route pattern into a request path.
func concrete(pattern string) string {
	segs := strings.Split(pattern, "/")
	for i, s := range segs {
		if isParam(s) {
			segs[i] = "42"
		}
	}
	return strings.Join(segs, "/")
}

type result struct {
	status    int
	www       string
	body      map[string]any
	claims    *verify.Claims
	hasClaims bool
	path      string
}

func newTestGuard() *Guard {
	return New(Config{Verifier: fakeVerifier{}, Logger: slog.New(slog.DiscardHandler)})
}

func do(t *testing.T, g *Guard, method, target string, authz ...string) result {
	t.Helper()
	var res result
	h := g.HTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res.claims, res.hasClaims = ClaimsFrom(r.Context())
		res.path = r.URL.Path
		w.WriteHeader(http.StatusOK)
	}))
	req := httptest.NewRequest(method, target, nil)
	for _, a := range authz {
		req.Header.Add("Authorization", a)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res.status = rec.Code
	res.www = rec.Header().Get("WWW-Authenticate")
	if rec.Code != http.StatusOK && rec.Body.Len() == 0 {
		// A bare challenge (no credentials): no body, no Content-Type.
		if ct := rec.Header().Get("Content-Type"); ct != "" {
			t.Errorf("%s %s: Content-Type = %q of an empty body", method, target, ct)
		}
	} else if rec.Code != http.StatusOK {
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type = %q; want application/json", method, target, ct)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &res.body); err != nil {
			t.Fatalf("%s %s: body %q: %v", method, target, rec.Body.String(), err)
		}
	}
	return res
}

// wwwMissingWant is the challenge of a request without credentials: no
// error code (RFC 6750 §3.1).
const wwwMissingWant = `Bearer`

func TestEveryRoute(t *testing.T) {
	g := newTestGuard()
	routes := DefaultTable().Routes()
	if len(routes) != 150 {
		t.Fatalf("DefaultTable has %d routes; want 150", len(routes))
	}
	for _, rt := range routes {
		path := concrete(rt.Path)
		t.Run(rt.Method+" "+rt.Path, func(t *testing.T) {
			got, ok := g.Table().Match(rt.Method, path)
			if !ok || got.Path != rt.Path {
				t.Fatalf("Match(%s, %s) = %q, %v; want %q", rt.Method, path, got.Path, ok, rt.Path)
			}
			if rt.Public {
				for _, authz := range [][]string{nil, {"Bearer not-a-valid-token"}, {"Basic Zm9vOmJhcg=="}} {
					res := do(t, g, rt.Method, path, authz...)
					if res.status != http.StatusOK || res.hasClaims {
						t.Errorf("public route with Authorization %q: status %d, claims %v; want 200 without claims", authz, res.status, res.hasClaims)
					}
				}
				res := do(t, g, rt.Method, path, "Bearer "+tokenFor("PROFILE_READ"))
				if res.status != http.StatusOK || !res.hasClaims || res.claims.ClientID != "app" {
					t.Errorf("public route with a valid token: status %d, claims %v; want 200 with claims", res.status, res.hasClaims)
				}
				return
			}

			required := rt.Scopes[0]
			// The right scope passes and the handler sees the claims.
			res := do(t, g, rt.Method, path, "Bearer "+tokenFor(required))
			if res.status != http.StatusOK || !res.hasClaims || res.claims.Subject != "7" {
				t.Errorf("with %s: status %d, claims %v; want 200 with claims", required, res.status, res.hasClaims)
			}
			// Unrestricted passes.
			if res := do(t, g, rt.Method, path, "Bearer unrestricted"); res.status != http.StatusOK {
				t.Errorf("unrestricted: status %d; want 200", res.status)
			}

			// Every other scope (without the ORG_ twin of a TEAM_ scope) gives 403.
			exclude := []string{required}
			if s, ok := strings.CutPrefix(required, "TEAM_"); ok {
				exclude = append(exclude, "ORG_"+s)
			}
			res = do(t, g, rt.Method, path, "Bearer "+tokenFor(allScopesExcept(exclude...)...))
			checkInsufficient(t, res, required)

			switch {
			case strings.HasPrefix(required, "TEAM_"):
				twin := "ORG_" + strings.TrimPrefix(required, "TEAM_")
				if res := do(t, g, rt.Method, path, "Bearer "+tokenFor(twin)); res.status != http.StatusOK {
					t.Errorf("ORG_ twin %s on a TEAM_ route: status %d; want 200", twin, res.status)
				}
			case strings.HasPrefix(required, "ORG_"):
				twin := "TEAM_" + strings.TrimPrefix(required, "ORG_")
				checkInsufficient(t, do(t, g, rt.Method, path, "Bearer "+tokenFor(twin)), required)
			}
			if s, ok := strings.CutSuffix(required, "_READ"); ok {
				checkInsufficient(t, do(t, g, rt.Method, path, "Bearer "+tokenFor(s+"_WRITE")), required)
			}

			// No token, a malformed header and an invalid token give 401.
			res = do(t, g, rt.Method, path)
			if res.status != http.StatusUnauthorized || res.www != wwwMissingWant || res.body != nil {
				t.Errorf("no token: %d %q %v; want 401 %q and no body", res.status, res.www, res.body, wwwMissingWant)
			}
			for _, authz := range []string{"Bearer forged", "Basic Zm9vOmJhcg==", "Bearer", "Bearer a b"} {
				res = do(t, g, rt.Method, path, authz)
				if res.status != http.StatusUnauthorized || !strings.HasPrefix(res.www, `Bearer error="invalid_token"`) || res.body["error"] != "invalid_token" {
					t.Errorf("Authorization %q: %d %q %v; want 401 invalid_token", authz, res.status, res.www, res.body)
				}
			}
		})
	}
}

func checkInsufficient(t *testing.T, res result, required string) {
	t.Helper()
	wantWWW := `Bearer error="insufficient_scope", scope="` + required + `"`
	if res.status != http.StatusForbidden || res.www != wantWWW {
		t.Errorf("status %d, WWW-Authenticate %q; want 403 %q", res.status, res.www, wantWWW)
		return
	}
	if res.body["error"] != "insufficient_scope" || res.body["error_description"] == "" {
		t.Errorf("body %v; want error insufficient_scope with a description", res.body)
	}
	req, _ := res.body["required_scopes"].([]any)
	if len(req) != 1 || req[0] != required {
		t.Errorf("required_scopes = %v; want [%s]", res.body["required_scopes"], required)
	}
	if _, ok := res.body["granted_scopes"].([]any); !ok {
		t.Errorf("granted_scopes = %v; want a list", res.body["granted_scopes"])
	}
}

func TestUnknownRoute(t *testing.T) {
	g := newTestGuard()
	for _, tc := range []struct {
		method, path string
	}{
		{"GET", "/v2/unknown"},
		{"PUT", "/v2/me"},            // known path, unknown method
		{"GET", "/v2/schedules/1/x"}, // deeper than any route
		{"GET", "/healthz"},
		{"GET", "/"},
		{"get", "/v2/me"}, // methods are case-sensitive
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			res := do(t, g, tc.method, tc.path, "Bearer "+tokenFor(allScopesExcept()...))
			if res.status != http.StatusForbidden || res.body["error_description"] != "this route is not available to third-party tokens" {
				t.Errorf("scoped token: %d %v; want 403 not available to third-party tokens", res.status, res.body)
			}
			if !strings.HasPrefix(res.www, `Bearer error="insufficient_scope"`) {
				t.Errorf("WWW-Authenticate = %q", res.www)
			}
			if res := do(t, g, tc.method, tc.path, "Bearer unrestricted"); res.status != http.StatusOK || !res.claims.Unrestricted {
				t.Errorf("unrestricted token: %d; want 200", res.status)
			}
			if res := do(t, g, tc.method, tc.path); res.status != http.StatusUnauthorized || res.www != wwwMissingWant {
				t.Errorf("no token: %d %q; want 401", res.status, res.www)
			}
			// A token with no scopes and no unrestricted claim is not unrestricted.
			if res := do(t, g, tc.method, tc.path, "Bearer scopes"); res.status != http.StatusForbidden {
				t.Errorf("token without scopes: %d; want 403", res.status)
			}
		})
	}
}

func TestPathRefused(t *testing.T) {
	g := newTestGuard()
	for _, target := range []string{
		"/v2/me/../teams",
		"/v2/me/%2e%2e/teams",
		"/v2/me/%2E%2E/teams",
		"/v2/./me",
		"/v2//me",
		"//v2/me",
		"/v2/me//",
		"/v2/teams%2F42",
		"/v2/teams%2f42/memberships",
		"/v2/teams%5C42",
		"/v2/teams\\42",
		"/v2/me/..",
		"/v2/me/.",
	} {
		t.Run(target, func(t *testing.T) {
			for _, tok := range []string{"unrestricted", tokenFor(allScopesExcept()...)} {
				res := do(t, g, "GET", target, "Bearer "+tok)
				if res.status != http.StatusBadRequest || res.body["error"] != "invalid_request" {
					t.Errorf("token %.12s: %d %v; want 400 invalid_request", tok, res.status, res.body)
				}
			}
			// Refused before the token matters, also on would-be public routes.
			if res := do(t, g, "GET", target); res.status != http.StatusBadRequest {
				t.Errorf("no token: %d; want 400", res.status)
			}
		})
	}
	if res := do(t, g, "GET", "/v2//slots"); res.status != http.StatusBadRequest {
		t.Errorf("GET /v2//slots: %d; want 400", res.status)
	}
}

func TestTrailingSlash(t *testing.T) {
	g := newTestGuard()
	res := do(t, g, "GET", "/v2/me/", "Bearer "+tokenFor("PROFILE_READ"))
	if res.status != http.StatusOK || res.path != "/v2/me" {
		t.Errorf("GET /v2/me/ with PROFILE_READ: %d, next saw %q; want 200 and /v2/me", res.status, res.path)
	}
	res = do(t, g, "GET", "/v2/me/", "Bearer "+tokenFor("SCHEDULE_READ"))
	if res.status != http.StatusForbidden {
		t.Errorf("GET /v2/me/ with SCHEDULE_READ: %d; want 403", res.status)
	}
	res = do(t, g, "GET", "/v2/slots/")
	if res.status != http.StatusOK || res.path != "/v2/slots" {
		t.Errorf("GET /v2/slots/ public: %d %q; want 200 /v2/slots", res.status, res.path)
	}
}

func TestBearer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		vals    []string
		token   string
		present bool
		ok      bool
	}{
		{"none", nil, "", false, false},
		{"bearer", []string{"Bearer abc.def-_~+/=="}, "abc.def-_~+/==", true, true},
		{"lower-case scheme", []string{"bearer abc"}, "abc", true, true},
		{"upper-case scheme", []string{"BEARER abc"}, "abc", true, true},
		{"extra spaces", []string{"Bearer   abc "}, "abc", true, true},
		{"empty", []string{""}, "", true, false},
		{"scheme only", []string{"Bearer"}, "", true, false},
		{"scheme and space", []string{"Bearer "}, "", true, false},
		{"basic", []string{"Basic abc"}, "", true, false},
		{"no space", []string{"Bearerabc"}, "", true, false},
		{"two tokens", []string{"Bearer a b"}, "", true, false},
		{"bad character", []string{"Bearer a\"b"}, "", true, false},
		{"padding inside", []string{"Bearer a=b"}, "", true, false},
		{"only padding", []string{"Bearer =="}, "", true, false},
		{"two headers", []string{"Bearer a", "Bearer b"}, "", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.vals {
				h.Add("Authorization", v)
			}
			token, _, present, ok := credentials(h)
			if token != tc.token || present != tc.present || ok != tc.ok {
				t.Errorf("bearer(%q) = %q, %v, %v; want %q, %v, %v", tc.vals, token, present, ok, tc.token, tc.present, tc.ok)
			}
		})
	}
}

func TestHeadUsesGetRoute(t *testing.T) {
	g := newTestGuard()
	if res := do(t, g, "HEAD", "/v2/me", "Bearer "+tokenFor("PROFILE_READ")); res.status != http.StatusOK {
		t.Errorf("HEAD /v2/me with PROFILE_READ: %d; want 200", res.status)
	}
	if res := do(t, g, "HEAD", "/v2/me", "Bearer "+tokenFor("PROFILE_WRITE")); res.status != http.StatusForbidden {
		t.Errorf("HEAD /v2/me with PROFILE_WRITE: %d; want 403", res.status)
	}
}

func TestEcho(t *testing.T) {
	g := newTestGuard()
	e := echo.New()
	var seen *verify.Claims
	e.GET("/v2/me", func(c echo.Context) error {
		seen, _ = ClaimsFrom(c.Request().Context())
		return c.String(http.StatusOK, "me")
	}, g.Echo())

	for _, tc := range []struct {
		name   string
		authz  string
		status int
		www    string
	}{
		{"scope", "Bearer " + tokenFor("PROFILE_READ"), http.StatusOK, ""},
		{"wrong scope", "Bearer " + tokenFor("PROFILE_WRITE"), http.StatusForbidden, `Bearer error="insufficient_scope", scope="PROFILE_READ"`},
		{"no token", "", http.StatusUnauthorized, wwwMissingWant},
		{"invalid token", "Bearer nope", http.StatusUnauthorized, `Bearer error="invalid_token", error_description="` + descInvalid + `"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen = nil
			req := httptest.NewRequest("GET", "/v2/me", nil)
			if tc.authz != "" {
				req.Header.Set("Authorization", tc.authz)
			}
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, req)
			if rec.Code != tc.status || rec.Header().Get("WWW-Authenticate") != tc.www {
				t.Fatalf("status %d WWW-Authenticate %q; want %d %q", rec.Code, rec.Header().Get("WWW-Authenticate"), tc.status, tc.www)
			}
			if (seen != nil) != (tc.status == http.StatusOK) {
				t.Errorf("handler saw claims %v for status %d", seen, rec.Code)
			}
			if tc.status == http.StatusForbidden {
				var body oauth.ScopeErrorBody
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(body.RequiredScopes, []string{"PROFILE_READ"}) || !slices.Equal(body.GrantedScopes, []string{"PROFILE_WRITE"}) {
					t.Errorf("body %+v; want required [PROFILE_READ] granted [PROFILE_WRITE]", body)
				}
			}
		})
	}
}

func TestErrorBodyEmptyGranted(t *testing.T) {
	g := newTestGuard()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/v2/me", nil)
	req.Header.Set("Authorization", "Bearer scopes")
	g.HTTP(http.NotFoundHandler()).ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Body)
	if !strings.Contains(string(body), `"granted_scopes":[]`) || !strings.Contains(string(body), `"required_scopes":["PROFILE_READ"]`) {
		t.Errorf("body %s; want granted_scopes [] and required_scopes [PROFILE_READ]", body)
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q; want no-store", cc)
	}
}

// TestChallengeScopes: with MetadataURL, a 401 on a route of the table
// names the route's scopes (RFC 9728 §5.1, the MCP authorization spec);
// one not in the table, a 403 and a refused path name none.
func TestChallengeScopes(t *testing.T) {
	const m = "https://rs.example/.well-known/oauth-protected-resource"
	g := New(Config{Verifier: fakeVerifier{}, Logger: slog.New(slog.DiscardHandler), MetadataURL: func(string) string { return m }})
	for _, tc := range []struct {
		name, path, authz string
		status            int
		www               string
	}{
		{"no token", "/v2/me", "", http.StatusUnauthorized, `Bearer resource_metadata="` + m + `", scope="PROFILE_READ"`},
		{"invalid token", "/v2/me", "Bearer nope", http.StatusUnauthorized,
			`Bearer error="invalid_token", error_description="` + descInvalid + `", resource_metadata="` + m + `", scope="PROFILE_READ"`},
		{"not in the table", "/v2/nowhere", "", http.StatusUnauthorized, `Bearer resource_metadata="` + m + `"`},
		{"wrong scope", "/v2/me", "Bearer " + tokenFor("PROFILE_WRITE"), http.StatusForbidden,
			`Bearer error="insufficient_scope", scope="PROFILE_READ", resource_metadata="` + m + `"`},
		{"bad path", "/v2/x/../me", "", http.StatusBadRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var authz []string
			if tc.authz != "" {
				authz = append(authz, tc.authz)
			}
			res := do(t, g, "GET", tc.path, authz...)
			if res.status != tc.status || res.www != tc.www {
				t.Errorf("GET %s: %d %q; want %d %q", tc.path, res.status, res.www, tc.status, tc.www)
			}
		})
	}
}
