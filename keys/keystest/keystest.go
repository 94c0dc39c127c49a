// Package keystest holds helpers for tests of code that verifies oauthd's
// tokens. It is imported only by tests.
package keystest

import (
	"crypto/elliptic"
	"encoding/base64"
	"math/big"
	"strings"
)

// LowS returns the ES256 token tok with its signature's S replaced by
// n − S when S > n/2, as oauthd's signer makes it: golang-jwt signs with
// a random S, which the verifier refuses half the time (no malleable
// tokens). Other tokens are returned unchanged.
func LowS(tok string) string {
	dot := strings.LastIndexByte(tok, '.')
	hdr, _ := base64.RawURLEncoding.DecodeString(tok[:max(0, strings.IndexByte(tok, '.'))])
	sig, err := base64.RawURLEncoding.DecodeString(tok[dot+1:])
	if err != nil || len(sig) != 64 || !strings.Contains(string(hdr), `"alg":"ES256"`) {
		return tok
	}
	n := elliptic.P256().Params().N
	s := new(big.Int).SetBytes(sig[32:])
	if s.Cmp(new(big.Int).Rsh(n, 1)) <= 0 {
		return tok
	}
	new(big.Int).Sub(n, s).FillBytes(sig[32:])
	return tok[:dot+1] + base64.RawURLEncoding.EncodeToString(sig)
}
