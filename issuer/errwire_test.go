package issuer

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"oauthd/keys/verify"

	"github.com/labstack/echo/v4"
)

// TestErrorWire pins the bytes clients see for the errors whose type
// changed when page and redirect errors came to carry *Error: the pushed
// authorization request endpoint's JSON (once made by re-parsing the
// redirect URL), an authorization error redirect and the denial redirect.
func TestErrorWire(t *testing.T) {
	env := newTkEnv(t)
	form := func(kv []string) string {
		v := url.Values{"client_id": {"pub"}, "response_type": {"code"}, "redirect_uri": {tkRedirect},
			"state": {"st-1"}, "code_challenge": {tkChallenge(tkVerifier)}, "code_challenge_method": {"S256"}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v.Encode()
	}
	for _, tc := range []struct {
		name string
		kv   []string
		want string
	}{
		{"unknown scope", []string{"scope", "PROFILE_READ NOPE"},
			`{"error":"invalid_scope","error_description":"unknown scope NOPE"}`},
		{"scope with a suggestion", []string{"scope", "PROFILE_RAED"},
			`{"error":"invalid_scope","error_description":"unknown scope PROFILE_RAED (did you mean PROFILE_READ?)"}`},
		{"response_type token", []string{"scope", "PROFILE_READ", "response_type", "token"},
			`{"error":"unsupported_response_type","error_description":"only response_type=code is supported"}`},
		{"request object", []string{"scope", "PROFILE_READ", "request", "eyJ.x.y"},
			`{"error":"request_not_supported","error_description":"request objects are not supported; push the parameters themselves"}`},
		{"unregistered redirect_uri (a page error)", []string{"scope", "PROFILE_READ", "redirect_uri", "https://evil.example/cb"},
			`{"error":"invalid_request","error_description":"The redirect_uri is not one of the redirect URIs registered for 'App pub'. It must match a registered URI exactly."}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := env.do(tkReq{path: "/v2/auth/oauth2/par", body: form(tc.kv)})
			if rec.Code != http.StatusBadRequest || rec.Body.String() != tc.want || rec.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("PAR = %d %s; want 400 %s", rec.Code, rec.Body, tc.want)
			}
		})
	}

	ctx := context.Background()
	q := url.Values{"client_id": {"pub"}, "redirect_uri": {tkRedirect}, "state": {"st 1"}, "scope": {"NOPE"}}
	_, err := env.s.ParseAuthorize(ctx, q)
	re, ok := err.(*RedirectError)
	if want := tkRedirect + "?error=invalid_scope&error_description=unknown+scope+NOPE&iss=https%3A%2F%2Fapi.example.com&state=st+1"; !ok || re.URL != want {
		t.Errorf("ParseAuthorize = %v; want a redirect to %s", err, want)
	}
	q.Set("scope", "PROFILE_READ")
	q.Set("code_challenge", tkChallenge(tkVerifier))
	to, err := env.s.Deny(ctx, q, 1)
	if want := tkRedirect + "?error=access_denied&error_description=The+user+denied+the+request.&iss=https%3A%2F%2Fapi.example.com&state=st+1"; err != nil || to != want {
		t.Errorf("Deny = %q, %v; want %s", to, err, want)
	}
}

// TestMeErrorWire pins /v2/me's error bytes (now written with
// oauth.ErrorBody and oauth.ScopeErrorBody, the guard's shapes).
func TestMeErrorWire(t *testing.T) {
	for _, tc := range []struct {
		name   string
		auth   string
		claims *verify.Claims
		status int
		www    string
		want   string
	}{
		// RFC 6750 §3.1: no credentials, no error information.
		{"no token", "", nil, http.StatusUnauthorized, "Bearer", ""},
		{"no claims", "Bearer x", nil, http.StatusUnauthorized, `Bearer error="invalid_token"`,
			`{"error":"invalid_token","error_description":"the request carries no valid access token"}`},
		{"wrong scope (guard bypassed)", "Bearer x", &verify.Claims{Subject: "1", ClientID: "conf", Scopes: []string{"PROFILE_WRITE"}}, http.StatusForbidden,
			`Bearer error="insufficient_scope", scope="PROFILE_READ"`,
			`{"error":"insufficient_scope","error_description":"the token's scopes do not cover this route: it requires PROFILE_READ","required_scopes":["PROFILE_READ"],"granted_scopes":["PROFILE_WRITE"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claims := tc.claims
			e := meRouter(t, &claims)
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/v2/me", nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			e.ServeHTTP(rec, req)
			wantBody, wantType := tc.want+"\n", "application/json"
			if tc.want == "" {
				wantBody, wantType = "", ""
			}
			if rec.Code != tc.status || rec.Body.String() != wantBody || rec.Header().Get("Content-Type") != wantType || rec.Header().Get("WWW-Authenticate") != tc.www {
				t.Errorf("GET /v2/me = %d %q %q %s; want %d %q %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Header().Get("WWW-Authenticate"), rec.Body,
					tc.status, wantType, tc.www, tc.want)
			}
		})
	}
}

// TestJSONErrorDescriptionCharset: whatever a description holds (a client's
// name in quotes, a backslash, a line break, non-ASCII), the JSON error body
// carries only RFC 6749 §5.2's characters (%x20-21 / %x23-5B / %x5D-7E).
func TestJSONErrorDescriptionCharset(t *testing.T) {
	e := echo.New()
	rec := httptest.NewRecorder()
	c := e.NewContext(httptest.NewRequest(http.MethodPost, "/v2/auth/oauth2/token", nil), rec)
	desc := "client \"Ünïcode\\App\"\r\nX-Injected: 1\ttab"
	if err := writeOAuthError(c, WithDescription(ErrInvalidRequest, "%s", desc)); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %s: %v", rec.Body, err)
	}
	if body.Error != "invalid_request" || body.Description == "" {
		t.Fatalf("body %s", rec.Body)
	}
	for _, r := range body.Description {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			t.Fatalf("error_description %q holds %q, outside RFC 6749 §5.2's set", body.Description, r)
		}
	}
	if !strings.HasPrefix(body.Description, "client '") || !strings.HasSuffix(body.Description, "1?tab") {
		t.Errorf("error_description %q: quotes should become apostrophes, the rest kept", body.Description)
	}
}
