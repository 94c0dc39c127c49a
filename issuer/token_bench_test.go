package issuer

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"oauthd/data"
)

// BenchmarkTokenRefresh measures the whole /token handler, in process
// through the Echo router, for refresh grants on data/memory with a real
// ES256 signer: parse, client authentication, rotation, signing, response.
func BenchmarkTokenRefresh(b *testing.B) {
	env := newTkEnv(b)
	rt := env.exchange().RefreshToken
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rt = benchTokenPost(b, env.e, "grant_type=refresh_token&client_id=conf&client_secret="+env.secretA+"&refresh_token="+rt)
	}
}

// benchTokenPost sends one form-encoded token request through the router,
// fails the benchmark unless it is answered 200, and returns the new
// refresh token.
func benchTokenPost(b *testing.B, e *echo.Echo, body string) string {
	req := httptest.NewRequest(http.MethodPost, "/v2/auth/oauth2/token", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	out := rec.Body.String()
	i := strings.Index(out, data.PrefixRefreshToken)
	j := strings.IndexByte(out[i:], '"')
	return out[i : i+j]
}
