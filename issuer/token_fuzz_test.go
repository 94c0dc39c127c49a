package issuer

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzParseTokenRequest feeds arbitrary bodies, content types, query strings
// and Authorization headers to the token request parser: it must never
// panic, and every error must be a 4xx *Error.
func FuzzParseTokenRequest(f *testing.F) {
	form := "application/x-www-form-urlencoded"
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("my+app%3A1:p%40ss%2Bword"))
	f.Add(form, "grant_type=authorization_code&code=oauthd_ac_x&redirect_uri=https%3A%2F%2Fa.example%2Fcb&client_id=c&client_secret=s", "", "")
	f.Add(form, "grant_type=refresh_token&refresh_token=oauthd_rt_a.b&scope=PROFILE_READ+BOOKING_READ", "", basic)
	f.Add(form+"; charset=UTF-8", "grant_type=refresh_token&grant_type=x", "", "")
	f.Add(form, "a=%ff&b=%00&c=%zz;d", "client_secret=x", "")
	f.Add("application/json", `{"grant_type":"authorization_code","code":"x","code_verifier":"`+strings.Repeat("a", 43)+`"}`, "", basic)
	f.Add("application/json", `{"grant_type":"refresh_token","grant_type":"x"}`, "", "")
	f.Add("application/json; charset=utf-8", `{"a":1,"b":[],"c":null,"d":{"e":"f"}}`, "", "")
	f.Add("application/json", `{"a":"\u0000","b":"\ud800"} trailing`, "", "Basic !!")
	f.Add("text/plain", "x", "", "Bearer abc")
	f.Add("multipart/form-data; boundary=x", "--x--", "", "Basic "+base64.StdEncoding.EncodeToString([]byte("id")))
	f.Fuzz(func(t *testing.T, ct, body, query, auth string) {
		target := "/v2/auth/oauth2/token"
		r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
		r.URL.RawQuery = query
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		req, e := parseTokenRequest(r)
		if e != nil {
			if e.Status < 400 || e.Status > 499 || e.Code == "" {
				t.Fatalf("error %+v is not a 4xx OAuth error", e)
			}
			return
		}
		for _, v := range []string{req.GrantType, req.Code, req.ClientID, req.ClientSecret, req.RefreshToken, req.BasicID, req.BasicSecret} {
			if len(v) > maxParamValue || strings.IndexByte(v, 0) >= 0 {
				t.Fatalf("accepted a value breaking the rules: %q", v)
			}
		}
		if req.Basic && req.BasicID == "" {
			t.Fatalf("Basic accepted with an empty client ID")
		}
	})
}
