package verify

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/lestrrat-go/jwx/v2/jwk"
)

// jwkJSON is the JWK of raw (a crypto key), with the members given.
func jwkJSON(t *testing.T, raw any, members map[string]string) json.RawMessage {
	t.Helper()
	k, err := jwk.FromRaw(raw)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range members {
		if err := k.Set(name, v); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jwksJSON(keys ...json.RawMessage) []byte {
	b, _ := json.Marshal(map[string][]json.RawMessage{"keys": keys})
	return b
}

func TestIsPrivate(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	edPub, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	for name, tc := range map[string]struct {
		raw  any
		want bool
	}{
		"EC private": {ec, true}, "EC public": {&ec.PublicKey, false},
		"OKP private": {edPriv, true}, "OKP public": {edPub, false},
		"symmetric": {[]byte("0123456789abcdef0123456789abcdef"), true},
	} {
		k, err := jwk.FromRaw(tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := IsPrivate(k); got != tc.want {
			t.Errorf("IsPrivate(%s) = %v; want %v", name, got, tc.want)
		}
	}
}

func TestParseClientJWKS(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	pub := jwkJSON(t, &ec.PublicKey, map[string]string{"kid": "a"})
	if _, err := ParseClientJWKS(jwksJSON(pub)); err != nil {
		t.Fatalf("ParseClientJWKS(a public EC key) = %v", err)
	}
	for name, tc := range map[string]struct {
		set  []byte
		want string
	}{
		"private":   {jwksJSON(jwkJSON(t, ec, nil)), "is a private key"},
		"symmetric": {jwksJSON(jwkJSON(t, []byte("0123456789abcdef0123456789abcdef"), nil)), "a symmetric key is never accepted"},
		"small RSA": {jwksJSON(jwkJSON(t, &small.PublicKey, nil)), "2048 bits"},
		"HS256 alg": {jwksJSON(jwkJSON(t, &ec.PublicKey, map[string]string{"alg": "HS256"})), `alg "HS256"`},
		"same kid":  {jwksJSON(pub, pub), "used by two keys"},
		"empty":     {jwksJSON(), "no key"},
	} {
		if _, err := ParseClientJWKS(tc.set); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ParseClientJWKS = %v; want an error saying %q", name, err, tc.want)
		}
	}
}

// TestAssertionKeyOfTheAlgsCurve: an ES256 assertion without kid is
// verified with the client's P-256 key even when a P-384 key without alg
// comes first in its set (the key's curve is part of the type an alg
// needs, checkKeyType), and an ES384 one with the P-384 key.
func TestAssertionKeyOfTheAlgsCurve(t *testing.T) {
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	set, err := ParseClientJWKS(jwksJSON(jwkJSON(t, &p384.PublicKey, nil), jwkJSON(t, &p256.PublicKey, nil)))
	if err != nil {
		t.Fatal(err)
	}
	keys := func(context.Context, bool) (jwk.Set, error) { return set, nil }
	now := time.Now()
	const client, aud = "c1", "https://issuer.example"
	for _, tc := range []struct {
		method jwt.SigningMethod
		key    any
	}{{jwt.SigningMethodES256, p256}, {jwt.SigningMethodES384, p384}} {
		token, err := jwt.NewWithClaims(tc.method, jwt.RegisteredClaims{Issuer: client, Subject: client, Audience: jwt.ClaimStrings{aud},
			ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute)), ID: "j-" + tc.method.Alg()}).SignedString(tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := VerifyAssertion(t.Context(), token, client, keys, []string{aud}, now); err != nil {
			t.Errorf("%s assertion without kid: %v", tc.method.Alg(), err)
		}
	}
}
