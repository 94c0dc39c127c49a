package issuer

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
)

// TestAccessClaimsJSON checks the access token's claims object member by
// member: the names, the members omitted when empty (grant_id, scope,
// unrestricted, cnf), and aud as a string for one audience and an array
// for several (RFC 7519 §4.1.3, RFC 8707 §2.2), as the signer encodes
// them (encoding/json).
func TestAccessClaimsJSON(t *testing.T) {
	cases := []struct {
		c    accessClaims
		want string
	}{
		{accessClaims{Issuer: "https://api.example.com", Subject: "42", Audience: audience{"https://api.example.com"}, ExpiresAt: 1700001800, IssuedAt: 1700000000, ID: "abc_-", ClientID: "c1", Scope: "PROFILE_READ BOOKING_READ"},
			`{"iss":"https://api.example.com","sub":"42","aud":"https://api.example.com","exp":1700001800,"iat":1700000000,"jti":"abc_-","client_id":"c1","scope":"PROFILE_READ BOOKING_READ"}`},
		{accessClaims{Issuer: "i", Subject: "1", Audience: audience{"a"}, ExpiresAt: 1, ID: "j", ClientID: "legacy", Unrestricted: true},
			`{"iss":"i","sub":"1","aud":"a","exp":1,"iat":0,"jti":"j","client_id":"legacy","unrestricted":true}`},
		{accessClaims{Issuer: "i", Subject: "2", Audience: audience{"a", "https://mcp.example.com/mcp"}, ExpiresAt: 2, ID: "j", ClientID: "spa", GrantID: "g", Scope: "PROFILE_READ", Cnf: &cnf{JKT: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}},
			`{"iss":"i","sub":"2","aud":["a","https://mcp.example.com/mcp"],"exp":2,"iat":0,"jti":"j","client_id":"spa","grant_id":"g","scope":"PROFILE_READ","cnf":{"jkt":"0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}}`},
		{accessClaims{Issuer: "i\"<&", Subject: "-7", Audience: audience{"é"}, ExpiresAt: -1, ID: "j", ClientID: "c"},
			`{"iss":"i\"\u003c\u0026","sub":"-7","aud":"é","exp":-1,"iat":0,"jti":"j","client_id":"c"}`},
	}
	for _, tc := range cases {
		b, err := json.Marshal(&tc.c)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(b); got != tc.want {
			t.Errorf("claims = %s\nwant     %s", got, tc.want)
		}
	}
}

// TestTokenResponseJSON checks the token response's body member by member
// (RFC 6749 §5.1, RFC 9449 §5, OpenID Connect Core §3.1.3.3) and its
// headers.
func TestTokenResponseJSON(t *testing.T) {
	s := &Server{cfg: Config{AccessTTL: 30 * time.Minute}}
	cases := []struct {
		name string
		r    tokenResponse
		want string
	}{
		{"refresh, scoped, bearer", s.newTokenResponse("at", "rt", []string{"PROFILE_READ", "BOOKING_READ"}, false, ""),
			`{"access_token":"at","refresh_token":"rt","token_type":"bearer","expires_in":1800,"scope":"PROFILE_READ BOOKING_READ"}`},
		{"client_credentials, DPoP-bound", s.newTokenResponse("at", "", []string{"PROFILE_READ"}, false, "jkt"),
			`{"access_token":"at","token_type":"DPoP","expires_in":1800,"scope":"PROFILE_READ"}`},
		{"unrestricted legacy grant, ID token", func() tokenResponse {
			r := s.newTokenResponse("at", "rt", nil, true, "")
			r.IDToken = "idt"
			return r
		}(), `{"access_token":"at","refresh_token":"rt","token_type":"bearer","expires_in":1800,"id_token":"idt"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			c := echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/", nil), rec)
			if err := writeTokenResponse(c, tc.r); err != nil {
				t.Fatal(err)
			}
			if rec.Code != http.StatusOK || rec.Body.String() != tc.want {
				t.Errorf("%d %s\nwant 200 %s", rec.Code, rec.Body, tc.want)
			}
			for h, want := range map[string]string{"Content-Type": "application/json", "Cache-Control": "no-store", "Pragma": "no-cache"} {
				if got := rec.Header().Get(h); got != want {
					t.Errorf("%s = %q; want %q", h, got, want)
				}
			}
		})
	}
}
