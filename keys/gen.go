package keys

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"oauthd/data"
	"oauthd/keys/verify"
)

// rsaBits is the size of generated RSA keys; loaded ones may be larger.
const rsaBits = 2048

// newKey makes a key of alg in state next, sealed when there is a master
// key.
func (m *Manager) newKey(alg string) (data.SigningKey, error) {
	k, err := generate(alg)
	if err != nil {
		return data.SigningKey{}, err
	}
	k.State = data.KeyNext
	k.CreatedAt = m.cfg.Now()
	if m.sealer != nil {
		k.Private, k.Sealed = m.sealer.seal(k.KID, k.Private), true
	}
	return k, nil
}

// generate makes a fresh key pair of alg with its private and public JWKs;
// kid is the RFC 7638 thumbprint (SHA-256, base64url). A key whose
// thumbprint begins with '-' (one in 64) is thrown away and another made,
// so that no kid reads as a command-line flag (`oauthd keys revoke KID`).
func generate(alg string) (data.SigningKey, error) {
	for {
		k, err := generateOnce(alg)
		if err != nil || !strings.HasPrefix(k.KID, "-") {
			return k, err
		}
	}
}

func generateOnce(alg string) (data.SigningKey, error) {
	var priv crypto.Signer
	var err error
	var jalg jwa.SignatureAlgorithm
	switch alg {
	case verify.ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		jalg = jwa.ES256
	case verify.EdDSA:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
		jalg = jwa.EdDSA
	case verify.RS256:
		priv, err = rsa.GenerateKey(rand.Reader, rsaBits)
		jalg = jwa.RS256
	default:
		return data.SigningKey{}, fmt.Errorf("generate key: alg %q: %w", alg, ErrUnsupportedAlg)
	}
	if err != nil {
		return data.SigningKey{}, fmt.Errorf("generate %s key: %w", alg, err)
	}
	privJWK, err := jwk.FromRaw(priv)
	if err != nil {
		return data.SigningKey{}, fmt.Errorf("generate %s key: %w", alg, err)
	}
	pubJWK, err := jwk.PublicKeyOf(privJWK)
	if err != nil {
		return data.SigningKey{}, fmt.Errorf("generate %s key: %w", alg, err)
	}
	tp, err := pubJWK.Thumbprint(crypto.SHA256)
	if err != nil {
		return data.SigningKey{}, fmt.Errorf("generate %s key: %w", alg, err)
	}
	kid := base64.RawURLEncoding.EncodeToString(tp)
	for _, k := range []jwk.Key{privJWK, pubJWK} {
		if err := k.Set(jwk.KeyIDKey, kid); err != nil {
			return data.SigningKey{}, err
		}
		if err := k.Set(jwk.AlgorithmKey, jalg); err != nil {
			return data.SigningKey{}, err
		}
		if err := k.Set(jwk.KeyUsageKey, jwk.ForSignature); err != nil {
			return data.SigningKey{}, err
		}
	}
	privJSON, err := json.Marshal(privJWK)
	if err != nil {
		return data.SigningKey{}, err
	}
	pubJSON, err := json.Marshal(pubJWK)
	if err != nil {
		return data.SigningKey{}, err
	}
	return data.SigningKey{KID: kid, Alg: alg, Private: privJSON, Public: pubJSON}, nil
}

// privateKey holds a parsed private key. It never prints or logs its
// material.
type privateKey struct{ crypto.Signer }

func (privateKey) String() string               { return "[private key]" }
func (privateKey) GoString() string             { return "[private key]" }
func (privateKey) LogValue() slog.Value         { return slog.StringValue("[private key]") }
func (privateKey) MarshalJSON() ([]byte, error) { return []byte(`"[private key]"`), nil }
