package guard

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"oauthd/keys/verify/dpoptest"
)

// BenchmarkGuardDPoP is the guard's cost per request for a DPoP-bound
// token (proof parsed and verified, jti into the in-memory cache) against
// a bearer token, with a verifier that costs nothing: the difference is
// the proof check alone. Proofs are signed before the timer starts.
func BenchmarkGuardDPoP(b *testing.B) {
	k := dpoptest.NewES256()
	g := New(Config{Verifier: boundVerifier{k.JKT()}, Logger: slog.New(slog.DiscardHandler), PublicURL: "https://api.example.com"})
	h := g.HTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	run := func(b *testing.B, authz string, proofs []string) {
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			req := httptest.NewRequest(http.MethodGet, "/v2/me", nil)
			req.Header.Set("Authorization", authz)
			if proofs != nil {
				req.Header.Set("DPoP", proofs[i])
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("status %d", rec.Code)
			}
		}
	}
	b.Run("bearer", func(b *testing.B) { run(b, "Bearer plain", nil) })
	b.Run("dpop", func(b *testing.B) {
		proofs := make([]string, b.N)
		for i := range proofs {
			proofs[i] = k.Proof("GET", "https://api.example.com/v2/me", "bound")
		}
		run(b, "DPoP bound", proofs)
	})
}
