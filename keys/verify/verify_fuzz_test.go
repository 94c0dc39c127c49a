package verify_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"oauthd/keys/keystest"
	"oauthd/keys/verify"
)

// The fuzz target's issuer, clock and key are fixed so that the tokens in
// fzKnownTokens (and in testdata/fuzz/FuzzVerify) stay valid.
const (
	fzIssuer = "https://oauthd.fuzz"
	fzKID    = "fuzz-es256"
	// fzD is the test key's private scalar: a test-only key, never used
	// anywhere else.
	fzD = "7a1c2e3f4b5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7"
)

var fzNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fzKnownTokens were signed once by fzKey with fzClaims (see
// fzSign, S made low as the verifier requires); the verifier must accept them, and they are the seeds the
// committed corpus is built from.
var fzKnownTokens = []string{
	"eyJhbGciOiJFUzI1NiIsImtpZCI6ImZ1enotZXMyNTYiLCJ0eXAiOiJhdCtqd3QifQ." +
		"eyJhdWQiOiJodHRwczovL29hdXRoZC5mdXp6IiwiY2xpZW50X2lkIjoiZnV6ei1jbGllbnQiLCJleHAiOjE3NzIzNzAwMDAsImlhdCI6MTc3MjM2NjQwMCwiaXNzIjoiaHR0cHM6Ly9vYXV0aGQuZnV6eiIsImp0aSI6ImZ1enotanRpIiwic2NvcGUiOiJCT09LSU5HX1JFQUQgUFJPRklMRV9SRUFEIiwic3ViIjoiNDIifQ." +
		"sszgEdc0_-AS4IGVM8EvyF-hoBJOkeHRo96EspgDZqNK08mzyl50TyAVAc4688Oo1pSqscu_5rLXXQvaIDLeeg",
}

func fzKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	d, err := hex.DecodeString(fzD)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// fzKeys is a KeySource holding one ES256 key.
type fzKeys struct{ pub *ecdsa.PublicKey }

func (k fzKeys) Key(_ context.Context, kid string) (crypto.PublicKey, string, error) {
	if kid != fzKID {
		return nil, "", fmt.Errorf("kid %q: %w", kid, verify.ErrUnknownKey)
	}
	return k.pub, verify.ES256, nil
}

func fzClaims() jwt.MapClaims {
	return jwt.MapClaims{
		"iss":       fzIssuer,
		"sub":       "42",
		"aud":       fzIssuer,
		"iat":       fzNow.Unix(),
		"exp":       fzNow.Add(time.Hour).Unix(),
		"jti":       "fuzz-jti",
		"client_id": "fuzz-client",
		"scope":     "BOOKING_READ PROFILE_READ",
	}
}

// fzSign signs claims with method and key under header typ at+jwt, kid
// fzKID, then applies hdr (a nil value deletes the header).
func fzSign(t testing.TB, m jwt.SigningMethod, key any, claims jwt.MapClaims, hdr map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, claims)
	tok.Header["typ"] = "at+jwt"
	tok.Header["kid"] = fzKID
	for h, v := range hdr {
		if v == nil {
			delete(tok.Header, h)
		} else {
			tok.Header[h] = v
		}
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return keystest.LowS(s)
}

func fzB64(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// FuzzVerify checks that Verifier.Verify never panics and accepts a token
// only when it is, byte for byte, one the test signed with the test key and
// valid claims: every tampered, re-encoded, re-signed, unsigned (alg none),
// HMAC-signed or otherwise mangled token is refused with an error wrapping
// ErrInvalidToken that does not echo the token.
//
// Seeds live in testdata/fuzz/FuzzVerify; run with
//
//	go test -run '^$' -fuzz '^FuzzVerify$' -fuzztime 60s ./keys/verify
func FuzzVerify(f *testing.F) {
	key := fzKey(f)
	v, err := verify.New(verify.Config{
		Issuer: fzIssuer,
		Keys:   fzKeys{&key.PublicKey},
		Now:    func() time.Time { return fzNow },
	})
	if err != nil {
		f.Fatal(err)
	}
	valid := make(map[string]bool)
	for _, tok := range fzKnownTokens {
		valid[tok] = true
	}
	// A token signed now is accepted too. It is checked here only and not
	// added to valid or the seeds: the fuzz cache outlives this run and its
	// randomised signature.
	fresh := fzSign(f, jwt.SigningMethodES256, key, fzClaims(), nil)
	for _, tok := range append([]string{fresh}, fzKnownTokens...) {
		if _, err := v.Verify(context.Background(), tok); err != nil {
			f.Fatalf("a token signed by the test key is refused: %v", err)
		}
	}
	for _, s := range fzSeeds(f, key) {
		f.Add(s)
	}

	f.Fuzz(func(t *testing.T, token string) {
		c, err := v.Verify(context.Background(), token)
		if err != nil {
			if c != nil {
				t.Fatalf("Verify returned claims with error %v", err)
			}
			if !errors.Is(err, verify.ErrInvalidToken) {
				t.Fatalf("Verify error %v does not wrap ErrInvalidToken", err)
			}
			if len(token) >= 16 && strings.Contains(err.Error(), token) {
				t.Fatalf("Verify error echoes the token: %v", err)
			}
			if valid[token] {
				t.Fatalf("Verify refuses a token the test signed: %v", err)
			}
			return
		}
		if !valid[token] {
			t.Fatalf("Verify accepted %q, which the test never signed (claims %+v)", token, *c)
		}
		if c == nil || c.Subject != "42" || c.ClientID != "fuzz-client" || c.Issuer != fzIssuer || c.Unrestricted {
			t.Fatalf("Verify accepted a valid token with claims %+v", c)
		}
	})
}

// fzSeeds returns the seed inputs of FuzzVerify: the known valid tokens and
// tampered and hostile variants of them. The committed corpus holds the
// same kinds of input (its re-signed ones with another random signature).
func fzSeeds(t testing.TB, key *ecdsa.PrivateKey) []string {
	t.Helper()
	known := fzKnownTokens[0]

	h, p, s := splitToken(known)
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	claims := fzClaims()
	withClaim := func(k string, val any) jwt.MapClaims {
		c := fzClaims()
		c[k] = val
		return c
	}
	seeds := []string{
		h + "." + p + "." + flip(s, 3),
		// Same signature bytes, non-zero trailing bits in the last character.
		h + "." + p + "." + s[:len(s)-1] + string(s[len(s)-1]+1),
		h + "." + flip(p, 5) + "." + s,
		flip(h, 2) + "." + p + "." + s,
		h + "." + fzB64(withClaim("scope", "BOOKING_READ PROFILE_READ ORG_ADMIN")) + "." + s,
		h + "." + fzB64(withClaim("unrestricted", true)) + "." + s,
		fzB64(map[string]any{"alg": "none", "typ": "at+jwt", "kid": fzKID}) + "." + p + ".",
		fzB64(map[string]any{"alg": "ES256", "typ": "at+jwt", "kid": fzKID}) + "." + p + ".",
		fzSign(t, jwt.SigningMethodHS256, pubDER, claims, map[string]any{"alg": "HS256"}),
		fzSign(t, jwt.SigningMethodES256, other, claims, nil),
		fzSign(t, jwt.SigningMethodES256, key, claims, map[string]any{"kid": "other"}),
		fzSign(t, jwt.SigningMethodES256, key, claims, map[string]any{"typ": nil}),
		fzSign(t, jwt.SigningMethodES256, key, claims, map[string]any{"typ": "JWT"}),
		fzSign(t, jwt.SigningMethodES256, key, withClaim("exp", fzNow.Add(-time.Hour).Unix()), nil),
		fzSign(t, jwt.SigningMethodES256, key, withClaim("iss", "https://evil.example"), nil),
		fzSign(t, jwt.SigningMethodES256, key, withClaim("aud", "https://other.example"), nil),
		fzSign(t, jwt.SigningMethodES256, key, withClaim("exp", nil), nil),
		fzSign(t, jwt.SigningMethodES256, key, withClaim("nbf", fzNow.Add(time.Hour).Unix()), nil),
		fzSign(t, jwt.SigningMethodES256, key, claims, map[string]any{"pad": strings.Repeat("A", 6<<10)}),
		fzSign(t, jwt.SigningMethodES256, key, claims, map[string]any{"pad": strings.Repeat("A", 64<<10)}),
		fzB64(map[string]any{"alg": "RS256", "typ": "at+jwt", "kid": fzKID}) + "." + p + "." + s,
		fzB64(map[string]any{"alg": "EdDSA", "typ": "at+jwt", "kid": fzKID}) + "." + p + "." + s,
		h + "." + p + "." + s + ".",
		h + "." + p,
		" " + known,
		known + "\n",
		"", ".", "..", "...", "a.b.c", "e30.e30.", "eyJhbGciOiJub25lIn0.e30.",
		"\x00\xff." + strings.Repeat("\xff", 100),
	}
	seeds = append(seeds, fzKnownTokens...)
	return seeds
}

func splitToken(tok string) (h, p, s string) {
	parts := strings.SplitN(tok, ".", 3)
	return parts[0], parts[1], parts[2]
}

// flip changes the character at i of a base64url string to another one of
// the alphabet.
func flip(s string, i int) string {
	b := []byte(s)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}
