package keys_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"oauthd/keys"
)

// appendClaims encodes itself (the jsonAppender fast path of Sign) and
// differently from encoding/json, so the test sees which one was used.
type appendClaims struct{ jwt.RegisteredClaims }

func (appendClaims) AppendJSON(b []byte) []byte {
	return append(b, `{"sub":"appended","exp":4102444800}`...)
}

func TestSignUsesAppendJSON(t *testing.T) {
	c := newClock()
	m, err := keys.New(t.Context(), keys.Config{Store: newStore(), Logger: discard(), Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := m.Sign(appendClaims{jwt.RegisteredClaims{Subject: "reflected"}})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q", tok)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(payload, &got); err != nil || got["sub"] != "appended" {
		t.Fatalf("payload %s (%v); want the AppendJSON encoding", payload, err)
	}
	// The signature covers what was appended.
	kid := func() string {
		var h struct{ Kid string }
		b, _ := base64.RawURLEncoding.DecodeString(parts[0])
		json.Unmarshal(b, &h)
		return h.Kid
	}()
	pub, alg, err := m.Key(t.Context(), kid)
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	if err := jwt.GetSigningMethod(alg).Verify(parts[0]+"."+parts[1], sig, pub); err != nil {
		t.Errorf("signature: %v", err)
	}
}
