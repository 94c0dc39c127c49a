package keys

import (
	"crypto"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"oauthd/keys/verify"
)

// TestKIDNeverStartsWithDash: a kid is the key's RFC 7638 thumbprint, and
// one thumbprint in 64 begins with '-', which the CLI would read as a flag
// (`oauthd keys revoke -AbC…`). generate makes another key instead; over
// 3000 keys the chance that none would have begun with '-' is e^-47.
func TestKIDNeverStartsWithDash(t *testing.T) {
	for i := range 3000 {
		alg := verify.EdDSA
		if i%10 == 0 {
			alg = verify.ES256
		}
		k, err := generate(alg)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(k.KID, "-") {
			t.Fatalf("generate(%s) made kid %q", alg, k.KID)
		}
		if i%500 == 0 { // the kid is still the thumbprint of the public key
			pub, err := jwk.ParseKey(k.Public)
			if err != nil {
				t.Fatal(err)
			}
			tp, err := pub.Thumbprint(crypto.SHA256)
			if err != nil || base64.RawURLEncoding.EncodeToString(tp) != k.KID {
				t.Fatalf("kid %q is not the key's thumbprint (%v)", k.KID, err)
			}
		}
	}
}
