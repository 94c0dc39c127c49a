package keys

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"oauthd/data"
	"oauthd/keys/verify"
)

// snapshot is the immutable in-memory state Sign, Key and JWKS read.
type snapshot struct {
	active *signer                     // nil when the store has no usable active key
	pub    map[string]verify.PublicKey // published keys by kid
	jwks   []byte                      // {"keys":[...]}: next, active, retired
	etag   string
	// refreshKey tags refresh tokens (Manager.RefreshTokenKey); nil when
	// the set has no secret yet.
	refreshKey []byte
}

// signer signs with one key; everything but the signature is precomputed.
type signer struct {
	kid    string
	method jwt.SigningMethod
	key    privateKey
	es256  bool   // key is an *ecdsa.PrivateKey on P-256: signES256 signs
	header string // base64url of the JOSE header
}

// Claims is the signer's contract with the claims it signs ([Manager.Sign]):
// JWT claims that append their own JSON object (RFC 7519 §7.1) to dst
// without reflection, as encoding/json would encode them, because signing
// is on the token endpoint's hot path. A claims type without AppendJSON
// does not compile as an argument to Sign; claims off the hot path go
// through [JSONClaims], which encodes them once with encoding/json.
//
// It is an alias of an interface literal, so that a consumer declares the
// very same type without importing keys (issuer.SignClaims): identical
// interface types are one type, and *Manager satisfies the consumer's
// Signer interface.
type Claims = interface {
	jwt.Claims
	AppendJSON(dst []byte) []byte
}

// JSONClaims returns claims as [Claims], encoded now with encoding/json:
// for claims that are not on a hot path (the revoked-grants feed, tests,
// a benchmark's tokens).
func JSONClaims(claims jwt.Claims) (Claims, error) {
	b, err := json.Marshal(claims)
	if err != nil {
		return nil, fmt.Errorf("sign: encode claims: %w", err)
	}
	return encodedClaims{Claims: claims, json: b}, nil
}

// encodedClaims are claims with their JSON encoding made beforehand.
type encodedClaims struct {
	jwt.Claims
	json []byte
}

// AppendJSON appends the encoding made by [JSONClaims].
func (c encodedClaims) AppendJSON(dst []byte) []byte { return append(dst, c.json...) }

// scratch holds a token's claims JSON and signing input while it is
// signed, so that the token string is the only allocation that stays.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// sign returns header.payload.signature (RFC 7515 §7.1).
func (s *signer) sign(claims Claims) (string, error) {
	bp := scratch.Get().(*[]byte)
	defer scratch.Put(bp)
	b := claims.AppendJSON((*bp)[:0])
	payload := b
	// The signing input follows the payload in the same buffer.
	n := len(b)
	enc := base64.RawURLEncoding
	b = append(b, s.header...)
	b = append(b, '.')
	b = enc.AppendEncode(b, payload)
	if cap(b) <= 16<<10 {
		*bp = b[:0]
	}
	input := b[n:]
	var sig []byte
	var err error
	if s.es256 {
		var raw [64]byte
		sig, err = signES256(raw[:0], s.key.Signer.(*ecdsa.PrivateKey), input)
	} else {
		sig, err = s.method.Sign(string(input), s.key.Signer)
	}
	if err != nil {
		return "", fmt.Errorf("sign with key %s: %w", s.kid, err)
	}
	var encSig [344]byte // a 2048-bit RSA signature; ES256 and EdDSA need 86
	var tok strings.Builder
	tok.Grow(len(input) + 1 + enc.EncodedLen(len(sig)))
	tok.Write(input)
	tok.WriteByte('.')
	tok.Write(enc.AppendEncode(encSig[:0], sig))
	return tok.String(), nil
}

// signES256 appends to dst the JWS ES256 signature of signingInput: the
// 32-byte big-endian R and S of ECDSA P-256 over its SHA-256 (RFC 7518
// §3.4). The nonce is derived as RFC 6979 specifies (crypto/ecdsa with a
// nil random source), not hedged with fresh randomness: as safe for a
// software key, and a sixth cheaper, because the hedged nonce's HMAC-DRBG
// runs on SHA-512 and reads the system's random source on every call.
// Verifiers cannot tell the two apart.
func signES256(dst []byte, key *ecdsa.PrivateKey, signingInput []byte) ([]byte, error) {
	digest := sha256.Sum256(signingInput)
	der, err := key.Sign(nil, digest[:], crypto.SHA256)
	if err != nil {
		return nil, err
	}
	var r, s []byte
	in := cryptobyte.String(der)
	var seq cryptobyte.String
	if !in.ReadASN1(&seq, cbasn1.SEQUENCE) || !in.Empty() ||
		!seq.ReadASN1Integer(&r) || !seq.ReadASN1Integer(&s) || !seq.Empty() ||
		len(r) > 32 || len(s) > 32 {
		return nil, errors.New("ecdsa: malformed signature")
	}
	var out [64]byte
	copy(out[32-len(r):32], r)
	copy(out[64-len(s):], s)
	lowS((*[32]byte)(out[32:]))
	return append(dst, out[:]...), nil
}

// p256N is the order n of P-256, as four big-endian 64-bit words.
var p256N = [4]uint64{0xffffffff00000000, 0xffffffffffffffff, 0xbce6faada7179e84, 0xf3b9cac2fc632551}

// lowS replaces s (32 bytes, big-endian, 0 < s < n) by n − s when s > n/2.
// (r, s) and (r, n − s) are both valid signatures of the same message;
// verifiers (keys/verify) accept only the low one, so that a token has a
// single valid spelling (no malleable tokens).
func lowS(s *[32]byte) {
	var w [4]uint64
	for i := range w {
		w[i] = binary.BigEndian.Uint64(s[8*i:])
	}
	// s > n/2 ⇔ 2s > n; n is odd, so 2s ≠ n.
	var d [4]uint64 // n − s
	var borrow uint64
	for i := 3; i >= 0; i-- {
		d[i], borrow = bits.Sub64(p256N[i], w[i], borrow)
	}
	// d < s ⇔ n − s < s ⇔ s > n/2.
	for i := range 4 {
		if d[i] != w[i] {
			if d[i] < w[i] {
				for j := range d {
					binary.BigEndian.PutUint64(s[8*j:], d[j])
				}
			}
			return
		}
	}
}

// install builds the snapshot of ks and makes it current.
func (m *Manager) install(ks []data.SigningKey) error {
	s, err := m.build(ks)
	if err != nil {
		return err
	}
	m.snap.Store(s)
	return nil
}

// build parses the published keys and the active private key. A published
// key that does not parse, or whose kid is not its thumbprint, is left out
// of the JWKS and logged; an active key that cannot sign is an error.
func (m *Manager) build(ks []data.SigningKey) (*snapshot, error) {
	var refreshKey []byte
	if hasRefreshSecret(ks) {
		var err error
		if refreshKey, err = m.refreshKeyOf(ks); err != nil {
			return nil, fmt.Errorf("refresh-token secret: %w", err)
		}
	}
	ks = signingKeys(ks)
	sortKeys(ks)
	set := jwk.NewSet()
	for _, k := range ks {
		pub, err := publicJWK(k)
		if err != nil {
			m.log.Error("signing key not published", "kid", truncate(k.KID, 64), "err", err)
			continue
		}
		if err := set.AddKey(pub); err != nil {
			return nil, fmt.Errorf("build jwks: %w", err)
		}
	}
	jwks, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("build jwks: %w", err)
	}
	// Parse what we publish with the verifiers' own rules: Key answers
	// exactly for the keys a resource server will accept.
	pub, err := verify.ParseJWKS(jwks, func(kid string, err error) {
		m.log.Error("signing key not usable by verifiers", "kid", truncate(kid, 64), "err", err)
	})
	if err != nil {
		return nil, fmt.Errorf("build jwks: %w", err)
	}
	sum := sha256.Sum256(jwks)
	s := &snapshot{pub: pub, jwks: jwks, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`, refreshKey: refreshKey}
	if i := indexOf(ks, data.KeyActive); i >= 0 {
		sg, err := m.signerOf(ks[i], pub[ks[i].KID])
		if err != nil {
			return nil, fmt.Errorf("active key %s: %w", ks[i].KID, err)
		}
		s.active = sg
	}
	return s, nil
}

// publicJWK parses k's public JWK and checks that its kid is its RFC 7638
// thumbprint and its alg the record's. Only the public members are kept.
func publicJWK(k data.SigningKey) (jwk.Key, error) {
	if !supported(k.Alg) {
		return nil, fmt.Errorf("alg %q: %w", k.Alg, ErrUnsupportedAlg)
	}
	parsed, err := jwk.ParseKey(k.Public)
	if err != nil {
		return nil, fmt.Errorf("parse public jwk: %w", err)
	}
	pub, err := jwk.PublicKeyOf(parsed)
	if err != nil {
		return nil, fmt.Errorf("public jwk: %w", err)
	}
	tp, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("thumbprint: %w", err)
	}
	if base64.RawURLEncoding.EncodeToString(tp) != k.KID {
		return nil, errors.New("kid is not the key's RFC 7638 thumbprint")
	}
	if pub.KeyID() != k.KID || pub.Algorithm().String() != k.Alg {
		return nil, errors.New("public jwk kid or alg differs from the record")
	}
	if err := pub.Set(jwk.KeyUsageKey, jwk.ForSignature); err != nil {
		return nil, err
	}
	return pub, nil
}

// signerOf opens k's private key and checks it matches its published
// public key.
func (m *Manager) signerOf(k data.SigningKey, pub verify.PublicKey) (*signer, error) {
	if pub.Key == nil {
		return nil, fmt.Errorf("not published: %w", ErrNoSigningKey)
	}
	raw, err := m.privateOf(k)
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("no private key: %w", ErrNoSigningKey)
	}
	pk, err := jwk.ParseKey(raw)
	if err != nil {
		return nil, errors.New("private jwk does not parse") // never echo key material
	}
	var rawKey any
	if err := pk.Raw(&rawKey); err != nil {
		return nil, errors.New("private jwk does not parse")
	}
	cs, ok := rawKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("private jwk is not a private key")
	}
	if rk, ok := cs.(*rsa.PrivateKey); ok {
		// Validate also precomputes the CRT values the JWK's dp, dq and
		// qi left half-built; without that, signing is ~4x slower.
		if err := rk.Validate(); err != nil {
			return nil, errors.New("private RSA key is invalid")
		}
		rk.Precompute()
	}
	if eq, ok := cs.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !eq.Equal(pub.Key) {
		return nil, errors.New("private key does not match the published public key")
	}
	method := jwt.GetSigningMethod(k.Alg)
	if method == nil {
		return nil, fmt.Errorf("alg %q: %w", k.Alg, ErrUnsupportedAlg)
	}
	hdr, err := json.Marshal(struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
		Typ string `json:"typ"`
	}{k.Alg, k.KID, "at+jwt"})
	if err != nil {
		return nil, err
	}
	sg := &signer{
		kid:    k.KID,
		method: method,
		key:    privateKey{cs},
		header: base64.RawURLEncoding.EncodeToString(hdr),
	}
	if ek, ok := cs.(*ecdsa.PrivateKey); ok && method == jwt.SigningMethodES256 && ek.Curve == elliptic.P256() {
		sg.es256 = true
	}
	return sg, nil
}

// JWKS returns the JSON of the published public keys ({"keys":[...]}:
// next, active, retired). The caller must not modify it.
func (m *Manager) JWKS() []byte {
	if s := m.snap.Load(); s != nil {
		return s.jwks
	}
	return []byte(`{"keys":[]}`)
}

// ServeJWKS serves [Manager.JWKS] as application/json with
// Cache-Control: public, max-age=JWKSMaxAge and an ETag.
func (m *Manager) ServeJWKS(c echo.Context) error {
	m.ServeHTTP(c.Response(), c.Request())
	return nil
}

// ServeHTTP serves the JWKS like [Manager.ServeJWKS], for net/http.
func (m *Manager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := m.snap.Load()
	body, etag := m.JWKS(), ""
	if s != nil {
		etag = s.etag
	}
	h := w.Header()
	h.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(m.cfg.JWKSMaxAge/time.Second)))
	if etag != "" {
		h.Set("ETag", etag)
		if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatch(inm, etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

func etagMatch(header, etag string) bool {
	for t := range strings.SplitSeq(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
