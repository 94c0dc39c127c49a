package issuer

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkTokenCode measures the whole /token handler for the
// authorization_code grant with PKCE (S256), in process through the Echo
// router on data/memory with a real ES256 signer; compare with
// BenchmarkTokenRefresh (the issue's "code exchange within 10% of
// refresh"). Seeding each code is outside the timer.
func BenchmarkTokenCode(b *testing.B) {
	env := newTkEnv(b)
	const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	challenge := tkChallenge(verifier)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		code := env.code(tkCodeOpts{client: "conf", challenge: challenge})
		body := "grant_type=authorization_code&client_id=conf&client_secret=" + env.secretA +
			"&code=" + code + "&redirect_uri=" + tkRedirect + "&code_verifier=" + verifier
		b.StartTimer()
		req := httptest.NewRequest(http.MethodPost, "/v2/auth/oauth2/token", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		env.e.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}
