package verify

import (
	"context"
	"crypto"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/lestrrat-go/jwx/v2/jwk"
)

// Client assertions (RFC 7523 §3, OpenID Connect Core §9
// private_key_jwt): a client authenticates with a JWT it signed with a
// private key whose public half it registered (a JWK set, inline or at a
// jwks_uri).

// AssertionType is the client_assertion_type of a JWT client assertion
// (RFC 7523 §2.2).
const AssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// AssertionAlgs are the algorithms a client assertion may be signed
// with: asymmetric only (no "none", no HMAC, so a public key can never
// serve as a shared secret).
var AssertionAlgs = []string{RS256, "PS256", ES256, "ES384", EdDSA}

// MaxAssertionLifetime bounds exp − now (and exp − iat) of a client
// assertion: a short-lived proof, whose jti the server keeps until exp.
const MaxAssertionLifetime = 5 * time.Minute

// MaxClientJWKS bounds a client's JWK set, inline or fetched.
const MaxClientJWKS = 64 << 10

// ErrInvalidAssertion: the client assertion is malformed, badly signed,
// expired, too long-lived, for another audience or another client. Every
// error of [VerifyAssertion] wraps it.
var ErrInvalidAssertion = errors.New("invalid client assertion")

// Assertion is a verified client assertion: what the caller records to
// make jti single use.
type Assertion struct {
	ClientID string
	JTI      string
	Expires  time.Time
}

// ParseClientJWKS parses a client's public JWK set and checks it: at most
// [MaxClientJWKS] bytes, at least one key, public keys only (a private
// member is refused: the client must keep its private key), of types RSA
// (2048 bits at least), EC or OKP, with an alg (when given) among
// [AssertionAlgs], and kids unique.
func ParseClientJWKS(raw []byte) (jwk.Set, error) {
	if len(raw) > MaxClientJWKS {
		return nil, fmt.Errorf("the JWK set is larger than %d bytes", MaxClientJWKS)
	}
	set, err := jwk.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("not a JWK set: %w", err)
	}
	if set.Len() == 0 {
		return nil, errors.New("the JWK set has no key")
	}
	var kids []string
	for i := 0; i < set.Len(); i++ {
		k, _ := set.Key(i)
		switch k.KeyType() {
		case "RSA", "EC", "OKP":
		default:
			return nil, fmt.Errorf("key %d: type %q; use RSA, EC or OKP (a symmetric key is never accepted)", i+1, k.KeyType())
		}
		if IsPrivate(k) {
			return nil, fmt.Errorf("key %d is a private key; register only the public key", i+1)
		}
		if a := k.Algorithm().String(); a != "" && !slices.Contains(AssertionAlgs, a) {
			return nil, fmt.Errorf("key %d: alg %q; use one of %s", i+1, a, strings.Join(AssertionAlgs, ", "))
		}
		if _, err := publicKey(k); err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		if kid := k.KeyID(); kid != "" {
			if slices.Contains(kids, kid) {
				return nil, fmt.Errorf("kid %q is used by two keys", kid)
			}
			kids = append(kids, kid)
		}
	}
	return set, nil
}

// IsPrivate reports whether k holds private material: a private RSA,
// EC or OKP key, or a symmetric key. The places that read keys someone
// else gives them (a client's JWK set, a platform's handover keys) refuse
// one: its owner must keep it.
func IsPrivate(k jwk.Key) bool {
	switch k.(type) {
	case jwk.RSAPrivateKey, jwk.ECDSAPrivateKey, jwk.OKPPrivateKey, jwk.SymmetricKey:
		return true
	}
	return false
}

// PeekAssertionClient returns the iss of a client assertion without
// verifying it: which client it claims to be, so that its keys can be
// looked up. Nothing else may be read from it before [VerifyAssertion].
func PeekAssertionClient(token string) (string, error) {
	if len(token) > MaxTokenSize {
		return "", fmt.Errorf("%w: longer than %d bytes", ErrInvalidAssertion, MaxTokenSize)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", fmt.Errorf("%w: not a signed JWT", ErrInvalidAssertion)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", fmt.Errorf("%w: malformed", ErrInvalidAssertion)
	}
	var c struct {
		Issuer string `json:"iss"`
	}
	if json.Unmarshal(b, &c) != nil || c.Issuer == "" {
		return "", fmt.Errorf("%w: no iss", ErrInvalidAssertion)
	}
	return c.Issuer, nil
}

// AssertionKeys finds the keys of a client: by kid, or all of them when
// the assertion names none. refresh asks the source again (a jwks_uri
// refetched after a rotation), at most as often as the source allows.
type AssertionKeys func(ctx context.Context, refresh bool) (jwk.Set, error)

// VerifyAssertion verifies a client assertion of clientID (RFC 7523 §3):
// signed by one of the client's keys with an alg of [AssertionAlgs] that
// the key allows; iss and sub both clientID; aud containing one of
// audiences; exp present, in the future and at most
// [MaxAssertionLifetime] away; nbf and iat, when present, not in the
// future (with leeway); a jti. It does not record the jti: the caller
// does, only after this succeeded (so a forged assertion cannot burn a
// jti).
func VerifyAssertion(ctx context.Context, token, clientID string, keys AssertionKeys, audiences []string, now time.Time) (Assertion, error) {
	bad := func(format string, args ...any) (Assertion, error) {
		return Assertion{}, fmt.Errorf("%w: %s", ErrInvalidAssertion, fmt.Sprintf(format, args...))
	}
	if len(token) > MaxTokenSize {
		return bad("longer than %d bytes", MaxTokenSize)
	}
	var claims struct {
		jwt.RegisteredClaims
	}
	var keyErr error
	keyFunc := func(t *jwt.Token) (any, error) {
		alg, _ := t.Header["alg"].(string)
		kid, _ := t.Header["kid"].(string)
		for _, refresh := range []bool{false, true} {
			set, err := keys(ctx, refresh)
			if err != nil {
				keyErr = err
				return nil, err
			}
			if pub, ok := pickKey(set, kid, alg); ok {
				return pub, nil
			}
			if kid == "" {
				break // a refetch cannot make a kid-less choice clearer
			}
		}
		return nil, fmt.Errorf("no key of the client has kid %q and allows %s", kid, alg)
	}
	p := jwt.NewParser(jwt.WithValidMethods(AssertionAlgs), jwt.WithTimeFunc(func() time.Time { return now }),
		jwt.WithLeeway(DefaultLeeway), jwt.WithExpirationRequired())
	if _, err := p.ParseWithClaims(token, &claims, keyFunc); err != nil {
		if keyErr != nil && !errors.Is(keyErr, ErrInvalidAssertion) {
			return Assertion{}, keyErr // the keys could not be had: not the client's fault
		}
		return bad("%v", err)
	}
	if claims.Issuer != clientID || claims.Subject != clientID {
		return bad("iss and sub must both be the client ID %q", clientID)
	}
	if !slices.ContainsFunc([]string(claims.Audience), func(a string) bool { return slices.Contains(audiences, a) }) {
		return bad("aud must be the issuer or this endpoint's URL")
	}
	exp := claims.ExpiresAt.Time
	if exp.Sub(now) > MaxAssertionLifetime {
		return bad("exp is more than %s away; sign short-lived assertions", MaxAssertionLifetime)
	}
	if claims.IssuedAt != nil && exp.Sub(claims.IssuedAt.Time) > MaxAssertionLifetime {
		return bad("exp − iat is more than %s", MaxAssertionLifetime)
	}
	if claims.ID == "" || len(claims.ID) > 256 {
		return bad("jti is required (at most 256 bytes)")
	}
	return Assertion{ClientID: clientID, JTI: claims.ID, Expires: exp}, nil
}

// pickKey returns the public key of set with kid (any key when kid is ""
// and the set has one that fits alg) whose type fits alg
// ([checkKeyType]) and whose alg, when set, is alg.
func pickKey(set jwk.Set, kid, alg string) (crypto.PublicKey, bool) {
	for i := 0; i < set.Len(); i++ {
		k, _ := set.Key(i)
		if kid != "" && k.KeyID() != kid {
			continue
		}
		if a := k.Algorithm().String(); a != "" && a != alg {
			continue
		}
		if u := k.KeyUsage(); u != "" && u != "sig" {
			continue
		}
		pub, err := publicKey(k)
		if err != nil || checkKeyType(pub, alg) != nil {
			continue
		}
		return pub, true
	}
	return nil, false
}

// publicKey returns the crypto public key of a JWK (its public part
// only); an RSA key must have [minRSABits] at least, whatever its alg.
func publicKey(k jwk.Key) (crypto.PublicKey, error) {
	pk, err := jwk.PublicKeyOf(k)
	if err != nil {
		return nil, err
	}
	var raw any
	if err := pk.Raw(&raw); err != nil {
		return nil, err
	}
	if r, ok := raw.(*rsa.PublicKey); ok && r.N.BitLen() < minRSABits {
		return nil, fmt.Errorf("an RSA key must have %d bits at least", minRSABits)
	}
	return raw, nil
}
