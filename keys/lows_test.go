package keys_test

import (
	"crypto/elliptic"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"oauthd/keys/verify"
)

// TestES256HighSRefused: the verifier refuses a token whose ES256
// signature was turned into its other valid form (r, n − s), and every
// token the manager signs verifies (the signer always gives the low S).
func TestES256HighSRefused(t *testing.T) {
	c := newClock()
	m := newManager(t, newStore(), c, nil)
	v := newVerifier(t, m, c)
	n := elliptic.P256().Params().N
	half := new(big.Int).Rsh(n, 1)
	enc := base64.RawURLEncoding
	tokens := 10000
	if testing.Short() {
		tokens = 500 // the twins (the first 20) all run; fewer low-S draws
	}
	for i := range tokens {
		cl := claimsAt(c.Now())
		cl.ID = fmt.Sprintf("jti-%d", i)
		tok, err := m.Sign(cl)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(ctxT(t), tok); err != nil {
			t.Fatalf("token %d we signed does not verify: %v", i, err)
		}
		if i >= 20 {
			continue
		}
		// Its twin with S' = n − S is a valid ECDSA signature of the same
		// input, with a high S: refused.
		dot := strings.LastIndexByte(tok, '.')
		sig, err := enc.DecodeString(tok[dot+1:])
		if err != nil || len(sig) != 64 {
			t.Fatalf("signature of token %d: %d bytes, %v", i, len(sig), err)
		}
		s := new(big.Int).SetBytes(sig[32:])
		if s.Cmp(half) > 0 {
			t.Fatalf("token %d has a high S", i)
		}
		new(big.Int).Sub(n, s).FillBytes(sig[32:])
		twin := tok[:dot+1] + enc.EncodeToString(sig)
		if _, err := v.Verify(ctxT(t), twin); !errors.Is(err, verify.ErrInvalidToken) {
			t.Errorf("token %d with S flipped to n − S: err = %v; want ErrInvalidToken", i, err)
		}
	}
}
