// Package dpoptest makes DPoP proofs (RFC 9449 §4) for tests: a client's
// key and the proofs it signs, with every claim under the test's control.
package dpoptest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
)

// Key is a client's DPoP key.
type Key struct {
	Alg     jwa.SignatureAlgorithm
	private any
	public  jwk.Key
}

// NewES256 returns a fresh P-256 key.
func NewES256() *Key {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return newKey(jwa.ES256, k, &k.PublicKey)
}

// NewEdDSA returns a fresh Ed25519 key.
func NewEdDSA() *Key {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return newKey(jwa.EdDSA, priv, pub)
}

func newKey(alg jwa.SignatureAlgorithm, priv, pub any) *Key {
	j, err := jwk.FromRaw(pub)
	if err != nil {
		panic(err)
	}
	return &Key{Alg: alg, private: priv, public: j}
}

// JKT returns the key's RFC 7638 thumbprint, base64url.
func (k *Key) JKT() string {
	tp, err := k.public.Thumbprint(crypto.SHA256)
	if err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(tp)
}

// Claims are a proof's claims; Proof fills jti and iat when empty.
type Claims struct {
	JTI string `json:"jti"`
	HTM string `json:"htm"`
	HTU string `json:"htu"`
	IAT int64  `json:"iat"`
	ATH string `json:"ath,omitempty"`
}

// Proof signs a proof for method and htu, with ath for accessToken when
// it is not "", iat now and a random jti.
func (k *Key) Proof(method, htu, accessToken string) string {
	c := Claims{HTM: method, HTU: htu}
	if accessToken != "" {
		c.ATH = ATH(accessToken)
	}
	return k.Sign(c, "dpop+jwt")
}

// Sign signs c with typ, filling an empty jti and a zero iat.
func (k *Key) Sign(c Claims, typ string) string {
	if c.JTI == "" {
		var b [16]byte
		rand.Read(b[:])
		c.JTI = base64.RawURLEncoding.EncodeToString(b[:])
	}
	if c.IAT == 0 {
		c.IAT = time.Now().Unix()
	}
	payload, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	h := jws.NewHeaders()
	_ = h.Set(jws.TypeKey, typ)
	_ = h.Set(jws.JWKKey, k.public)
	out, err := jws.Sign(payload, jws.WithKey(k.Alg, k.private, jws.WithProtectedHeaders(h)))
	if err != nil {
		panic(err)
	}
	return string(out)
}

// ATH is base64url(SHA-256(token)).
func ATH(token string) string {
	s := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(s[:])
}
