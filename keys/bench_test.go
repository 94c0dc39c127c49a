package keys_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"testing"

	"oauthd/keys"
)

// BenchmarkSign measures Manager.Sign per alg; BenchmarkSign/raw-ES256 is
// the bare ecdsa.Sign of a SHA-256 to compare against.
func BenchmarkSign(b *testing.B) {
	for _, alg := range []string{"ES256", "EdDSA", "RS256"} {
		b.Run(alg, func(b *testing.B) {
			c := newClock()
			m, err := keys.New(b.Context(), keys.Config{Store: newStore(), Logger: discard(), Now: c.Now, Alg: alg})
			if err != nil {
				b.Fatal(err)
			}
			claims := claimsAt(c.Now())
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Sign(claims); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("raw-ES256", func(b *testing.B) {
		priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		msg := []byte("eyJhbGciOiJFUzI1NiIsImtpZCI6IngiLCJ0eXAiOiJhdCtqd3QifQ.eyJpc3MiOiJodHRwczovL29hdXRoZC50ZXN0Iiwic3ViIjoiNDIifQ")
		b.ReportAllocs()
		for b.Loop() {
			h := sha256.Sum256(msg)
			if _, _, err := ecdsa.Sign(rand.Reader, priv, h[:]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
