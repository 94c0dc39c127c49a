package guard

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// BenchmarkGuardES256Parallel is BenchmarkGuardES256 on every core (the
// issue's "verifier middleware ≥ 80% of raw ES256 verify, both cores");
// compare with BenchmarkRawES256Parallel from the same run.
func BenchmarkGuardES256Parallel(b *testing.B) {
	v, token := es256Setup(b)
	g := New(Config{Verifier: v, Logger: slog.New(slog.DiscardHandler)})
	h := g.HTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	check := httptest.NewRequest("GET", "/v2/organizations/1/teams/2/event-types/3", nil)
	check.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, check)
	if rec.Code != http.StatusOK {
		b.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := httptest.NewRequest("GET", "/v2/organizations/1/teams/2/event-types/3", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		w := discardWriter{h: http.Header{}}
		for pb.Next() {
			h.ServeHTTP(w, req)
		}
	})
}

// BenchmarkRawES256Parallel is the bare golang-jwt ES256 signature check
// (the library keys/verify uses) of a token of the same shape, on every
// core.
func BenchmarkRawES256Parallel(b *testing.B) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": "https://issuer.example", "sub": "7", "aud": "https://issuer.example", "client_id": "app",
		"scope": "ORG_EVENT_TYPE_READ PROFILE_READ", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": "j1",
	})
	s, err := tok.SignedString(priv)
	if err != nil {
		b.Fatal(err)
	}
	i := strings.LastIndexByte(s, '.')
	signed := s[:i]
	sig, err := jwt.NewParser().DecodeSegment(s[i+1:])
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := jwt.SigningMethodES256.Verify(signed, sig, &priv.PublicKey); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
