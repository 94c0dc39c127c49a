package keys_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"oauthd/data/memory"
	"oauthd/keys"
)

// TestSignEncodesClaims: Sign's payload is the claims as encoding/json
// encodes them (its escaping included), and claims encoding/json cannot
// encode are an error, not a token.
func TestSignEncodesClaims(t *testing.T) {
	m, err := keys.New(context.Background(), keys.Config{Store: memory.New(), Now: time.Now, MasterKey: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := m.Sign(jwt.MapClaims{"sub": "42", "b": "<&>"})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a compact JWS", tok)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(payload), `{"b":"\u003c\u0026\u003e","sub":"42"}`; got != want {
		t.Errorf("payload = %s; want %s", got, want)
	}
	if tok, err := m.Sign(jwt.MapClaims{"bad": func() {}}); err == nil {
		t.Errorf("Sign of claims encoding/json cannot encode = %q, nil; want an error", tok)
	}
}
