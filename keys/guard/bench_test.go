package guard

import (
	"context"
	"crypto"
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

	"oauthd/keys/keystest"
	"oauthd/keys/verify"
)

func BenchmarkMatch(b *testing.B) {
	tbl := DefaultTable()
	for _, bc := range []struct{ name, method, path string }{
		{"short", "GET", "/v2/me"},
		{"deep", "DELETE", "/v2/organizations/1/teams/2/event-types/3/private-links/4"},
		{"backtrack", "PATCH", "/v2/schedules/default"},
		{"miss", "GET", "/v2/unknown/route"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := tbl.Match(bc.method, bc.path); !ok && bc.name != "miss" {
					b.Fatal("no match")
				}
			}
		})
	}
}

// benchGuard runs one allowed request per iteration through g in front of
// a handler that does nothing.
func benchGuard(b *testing.B, g *Guard, token string) {
	h := g.HTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	req := httptest.NewRequest("GET", "/v2/organizations/1/teams/2/event-types/3", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	w := discardWriter{h: http.Header{}}
	// Check once that the request is allowed.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, req)
	}
}

type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d discardWriter) WriteHeader(int)             {}

// BenchmarkGuardHTTP measures the middleware alone (fake verifier).
func BenchmarkGuardHTTP(b *testing.B) {
	claims := &verify.Claims{Subject: "7", ClientID: "app", Scopes: []string{"ORG_EVENT_TYPE_READ"}}
	g := New(Config{Verifier: mapVerifier{"tok": claims}, Logger: slog.New(slog.DiscardHandler)})
	benchGuard(b, g, "tok")
}

type mapVerifier map[string]*verify.Claims

func (m mapVerifier) Verify(_ context.Context, token string) (*verify.Claims, error) {
	if c, ok := m[token]; ok {
		return c, nil
	}
	return nil, verify.ErrInvalidToken
}

type staticKey struct {
	kid string
	key crypto.PublicKey
}

func (s staticKey) Key(_ context.Context, kid string) (crypto.PublicKey, string, error) {
	if kid != s.kid {
		return nil, "", verify.ErrUnknownKey
	}
	return s.key, verify.ES256, nil
}

// es256Setup returns a real verifier, without its token cache (these
// benchmarks measure verification), and a real ES256 access token for it.
func es256Setup(b *testing.B) (*verify.Verifier, string) {
	v, mint := es256Issuer(b, -1)
	return v, mint("j1")
}

// es256Issuer returns a real verifier whose cache holds cacheEntries
// tokens (-1: no cache) and a function that mints a real ES256 access
// token for it with the given jti.
func es256Issuer(b *testing.B, cacheEntries int) (*verify.Verifier, func(jti string) string) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	const iss = "https://issuer.example"
	v, err := verify.New(verify.Config{Issuer: iss, Keys: staticKey{kid: "k1", key: &priv.PublicKey}, CacheEntries: cacheEntries})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	return v, func(jti string) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
			"iss": iss, "sub": "7", "aud": iss, "client_id": "app", "scope": "ORG_EVENT_TYPE_READ PROFILE_READ",
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": jti,
		})
		tok.Header["typ"] = "at+jwt"
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(priv)
		if err != nil {
			b.Fatal(err)
		}
		return keystest.LowS(s)
	}
}

// BenchmarkGuardES256 is the whole middleware with a real verifier and a
// real ES256 token.
func BenchmarkGuardES256(b *testing.B) {
	v, token := es256Setup(b)
	g := New(Config{Verifier: v, Logger: slog.New(slog.DiscardHandler)})
	benchGuard(b, g, token)
}

// BenchmarkVerifyES256 is verify.Verifier.Verify alone, and
// BenchmarkRawES256 the bare signature check, for comparison.
func BenchmarkVerifyES256(b *testing.B) {
	v, token := es256Setup(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, token); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRawES256(b *testing.B) {
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"sub": "7"})
	s, _ := tok.SignedString(priv)
	i := strings.LastIndexByte(s, '.')
	signed := s[:i]
	sig, err := jwt.NewParser().DecodeSegment(s[i+1:])
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := jwt.SigningMethodES256.Verify(signed, sig, &priv.PublicKey); err != nil {
			b.Fatal(err)
		}
	}
}
