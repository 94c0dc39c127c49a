package handover_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"oauthd/consent/handover"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func claims(aud string) jwt.MapClaims {
	return jwt.MapClaims{"iss": "https://platform.example", "aud": aud, "sub": "u1", "email": "u1@example.com",
		"iat": t0.Unix(), "exp": t0.Add(30 * time.Second).Unix(), "challenge": "c", "jti": "j1"}
}

// signedAt is a valid assertion for aud issued at now (claims, 30 s of
// life), signed with k under kid.
func signedAt(k *ecdsa.PrivateKey, kid, aud string, now time.Time) string {
	c := claims(aud)
	c["iat"], c["exp"] = now.Unix(), now.Add(30*time.Second).Unix()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["kid"] = kid
	s, _ := tok.SignedString(k)
	return s
}

// writeKeys writes pub as a JWKS file (kid) or, when asPEM, a PEM file.
func writeKeys(t *testing.T, pub any, kid string, asPEM bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys")
	var b []byte
	if asPEM {
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		b = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	} else {
		k, err := jwk.FromRaw(pub)
		if err != nil {
			t.Fatal(err)
		}
		_ = k.Set(jwk.KeyIDKey, kid)
		set := jwk.NewSet()
		_ = set.AddKey(k)
		b, _ = json.Marshal(set)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestVerifyAlgsAndKeyFiles: ES256, EdDSA and RS256 from a JWKS file or a
// PEM file verify; HS256 with the public key as secret does not.
func TestVerifyAlgsAndKeyFiles(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	edPub, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	rs, _ := rsa.GenerateKey(rand.Reader, 2048)
	const aud = "https://oauthd.example"
	tests := []struct {
		name   string
		method jwt.SigningMethod
		priv   any
		pub    any
		pem    bool
	}{
		{"ES256 JWKS file", jwt.SigningMethodES256, ec, &ec.PublicKey, false},
		{"EdDSA PEM file", jwt.SigningMethodEdDSA, edPriv, edPub, true},
		{"RS256 PEM file", jwt.SigningMethodRS256, rs, &rs.PublicKey, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := handover.New(context.Background(), handover.Config{Issuer: "https://platform.example", Audience: aud,
				Keys: writeKeys(t, tc.pub, "k1", tc.pem), Now: func() time.Time { return t0.Add(10 * time.Second) }})
			if err != nil {
				t.Fatal(err)
			}
			tok := jwt.NewWithClaims(tc.method, claims(aud))
			if !tc.pem {
				tok.Header["kid"] = "k1"
			}
			s, err := tok.SignedString(tc.priv)
			if err != nil {
				t.Fatal(err)
			}
			a, err := v.Verify(context.Background(), s)
			if err != nil || a.Subject != "u1" || a.Challenge != "c" || a.ID != "j1" {
				t.Fatalf("Verify = %+v, %v", a, err)
			}
			if _, err := v.Verify(context.Background(), s[:len(s)-4]+"AAAA"); !errors.Is(err, handover.ErrSignature) {
				t.Fatalf("Verify(tampered) = %v; want ErrSignature", err)
			}
			if !tc.pem {
				return
			}
			// A PEM key has no kid: it is named by its RFC 7638
			// thumbprint, so a platform signs with the same kid whether
			// oauthd reads its JWKS or its PEM file; another kid is refused.
			pub, err := jwk.FromRaw(tc.pub)
			if err != nil {
				t.Fatal(err)
			}
			thumb, err := pub.Thumbprint(crypto.SHA256)
			if err != nil {
				t.Fatal(err)
			}
			for kid, want := range map[string]error{base64.RawURLEncoding.EncodeToString(thumb): nil, "k1": handover.ErrSignature} {
				tok.Header["kid"] = kid
				s, err := tok.SignedString(tc.priv)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := v.Verify(context.Background(), s); !errors.Is(err, want) {
					t.Errorf("Verify(kid %q) = %v; want %v", kid, err, want)
				}
			}
		})
	}
	// A private key in the key file is refused at start.
	k, _ := jwk.FromRaw(ec)
	b, _ := json.Marshal(k)
	path := filepath.Join(t.TempDir(), "priv.json")
	_ = os.WriteFile(path, b, 0o600)
	if _, err := handover.New(context.Background(), handover.Config{Issuer: "i", Audience: aud, Keys: path}); !errors.Is(err, handover.ErrKeys) {
		t.Fatalf("New with a private key file = %v; want ErrKeys", err)
	}
}

// TestVerifyFollowsRotation: a JWKS URL is fetched again when an assertion
// names an unknown kid (at most every MinRefresh), and the old key keeps
// working while the platform still publishes it.
func TestVerifyFollowsRotation(t *testing.T) {
	const aud = "https://oauthd.example"
	k1, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	published := map[string]*ecdsa.PrivateKey{"k1": k1}
	fetches, down := 0, false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches++
		if down {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		set := jwk.NewSet()
		for kid, k := range published {
			j, _ := jwk.FromRaw(&k.PublicKey)
			_ = j.Set(jwk.KeyIDKey, kid)
			_ = set.AddKey(j)
		}
		_ = json.NewEncoder(w).Encode(set)
	}))
	defer srv.Close()
	now := t0
	v, err := handover.New(context.Background(), handover.Config{Issuer: "https://platform.example", Audience: aud,
		Keys: srv.URL, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(k *ecdsa.PrivateKey, kid string) string { return signedAt(k, kid, aud, now) }
	if _, err := v.Verify(context.Background(), sign(k1, "k1")); err != nil {
		t.Fatal(err)
	}
	published["k2"] = k2
	// Within MinRefresh of the last fetch, an unknown kid fetches nothing.
	if _, err := v.Verify(context.Background(), sign(k2, "k2")); !errors.Is(err, handover.ErrSignature) || fetches != 1 {
		t.Fatalf("unknown kid right after a fetch: %v, %d fetches; want ErrSignature, 1", err, fetches)
	}
	now = now.Add(3 * time.Second)
	if _, err := v.Verify(context.Background(), sign(k2, "k2")); err != nil || fetches != 2 {
		t.Fatalf("after the rotation: %v, %d fetches; want nil, 2", err, fetches)
	}
	if _, err := v.Verify(context.Background(), sign(k1, "k1")); err != nil {
		t.Fatalf("the old key, still published: %v", err)
	}
	// The platform's JWKS is down: the keys in hand keep working, and
	// made-up kids cause at most one fetch per MinRefresh.
	down = true
	now = now.Add(3 * time.Second)
	for range 5 {
		if _, err := v.Verify(context.Background(), sign(k1, "made-up")); !errors.Is(err, handover.ErrSignature) {
			t.Fatalf("made-up kid while the JWKS is down: %v; want ErrSignature", err)
		}
	}
	if fetches != 3 {
		t.Fatalf("%d fetches; want 3 (one attempt while down)", fetches)
	}
	if _, err := v.Verify(context.Background(), sign(k2, "k2")); err != nil {
		t.Fatalf("a known key while the JWKS is down: %v", err)
	}
}

// TestDocExample: docs/LOGIN-HANDOVER.md quotes the platform's handover
// from docs/examples/platform/main.go (a program CI builds and runs
// against the real server: cmd/oauthd's TestPlatformExample) verbatim.
func TestDocExample(t *testing.T) {
	src, err := os.ReadFile("../../docs/examples/platform/main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok1 := strings.Cut(string(src), "// BEGIN HANDOVER\n")
	code, _, ok2 := strings.Cut(after, "\n// END HANDOVER")
	if !ok1 || !ok2 || len(code) < 500 {
		t.Fatal("docs/examples/platform/main.go lost its BEGIN HANDOVER / END HANDOVER markers")
	}
	doc, err := os.ReadFile("../../docs/LOGIN-HANDOVER.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```go\n"+strings.TrimSpace(code)+"\n```") {
		t.Fatal("docs/LOGIN-HANDOVER.md does not quote docs/examples/platform/main.go's handover verbatim; copy it over")
	}
}
