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
	// All b.N codes are seeded before the timer starts: stopping and
	// restarting it around each seeding (which reads the memory statistics
	// with ReportAllocs) cost more than the exchange itself.
	bodies := make([]string, b.N)
	for i := range bodies {
		code := env.code(tkCodeOpts{client: "conf", challenge: challenge})
		bodies[i] = "grant_type=authorization_code&client_id=conf&client_secret=" + env.secretA +
			"&code=" + code + "&redirect_uri=" + tkRedirect + "&code_verifier=" + verifier
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest(http.MethodPost, "/v2/auth/oauth2/token", strings.NewReader(bodies[i]))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		env.e.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}
