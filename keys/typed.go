package keys

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/golang-jwt/jwt/v5"
)

// SignTyped signs claims with the active key like [Manager.Sign], with typ
// as the JOSE header's typ instead of "at+jwt". The issuer signs its
// revoked-grants feed with it (typ "revoked-grants+jwt"), so that the
// feed can never pass for an access token (verifiers require at+jwt,
// RFC 9068 §4) nor a token for the feed. Not on a hot path: the header is
// encoded on each call.
func (m *Manager) SignTyped(typ string, claims jwt.Claims) (string, error) {
	return m.SignWith(typ, func(string) (jwt.Claims, error) { return claims, nil })
}

// SignWith signs the claims build returns for the active key's alg, with
// typ as the JOSE header's typ (not "at+jwt": that is [Manager.Sign]'s).
// The issuer signs OpenID Connect ID tokens with it (typ "JWT"), whose
// at_hash depends on the alg (OpenID Connect Core §3.1.3.6): build runs
// against the key that then signs, so a rotation in between cannot give a
// token a hash of the other alg. Not on a hot path.
func (m *Manager) SignWith(typ string, build func(alg string) (jwt.Claims, error)) (string, error) {
	s := m.snap.Load()
	if s == nil || s.active == nil {
		return "", ErrNoSigningKey
	}
	if typ == "" || typ == "at+jwt" {
		return "", fmt.Errorf("sign: typ %q is not for SignTyped (use Sign)", typ)
	}
	claims, err := build(s.active.method.Alg())
	if err != nil {
		return "", err
	}
	hdr, err := json.Marshal(struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
		Typ string `json:"typ"`
	}{s.active.method.Alg(), s.active.kid, typ})
	if err != nil {
		return "", err
	}
	sg := *s.active
	sg.header = base64.RawURLEncoding.EncodeToString(hdr)
	return sg.sign(claims)
}
