package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOAuth4WebAPIPrivateKeyJWT: a certified client library (oauth4webapi,
// PrivateKeyJwt) makes a key pair, the operator registers its public JWK
// set with `clients create --jwks FILE --grant-type client_credentials`,
// and the library gets two client_credentials tokens with assertions it
// signed (a new jti each time). The tokens name the client, no user.
func TestOAuth4WebAPIPrivateKeyJWT(t *testing.T) {
	dir := npmClientDir(t, "oauth4webapi-pkjwt")
	e := startE2E(t)
	node := startNode(t, dir, "oauth4webapi private_key_jwt client", "ISSUER="+e.base)
	var step1 struct {
		Step string          `json:"step"`
		JWKS json.RawMessage `json:"jwks"`
	}
	node.read(&step1)
	if step1.Step != "jwks" {
		t.Fatalf("first step: %+v", step1)
	}
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(file, step1.JWKS, 0o600); err != nil {
		t.Fatal(err)
	}
	id, secret := e.client(t, e2eRedirect, []string{"BOOKING_READ"}, "--grant-type", "client_credentials", "--jwks", file)
	if secret != "" {
		t.Fatalf("a keyed client got a secret")
	}
	fmt.Fprintf(node.in, `{"client_id":%q}`+"\n", id)
	var done struct {
		Step   string `json:"step"`
		Tokens []struct {
			AccessToken  string  `json:"access_token"`
			TokenType    string  `json:"token_type"`
			Scope        string  `json:"scope"`
			RefreshToken *string `json:"refresh_token"`
		} `json:"tokens"`
	}
	node.read(&done)
	if done.Step != "done" || len(done.Tokens) != 2 {
		t.Fatalf("done: %+v", done)
	}
	for _, tok := range done.Tokens {
		if !strings.EqualFold(tok.TokenType, "bearer") || tok.Scope != "BOOKING_READ" || tok.RefreshToken != nil {
			t.Errorf("token = %+v", tok)
		}
		claims, _ := e.verifyJWT(t, t.Context(), tok.AccessToken)
		if claims["sub"] != id || claims["client_id"] != id || claims["grant_id"] != nil {
			t.Errorf("claims = %v; want sub = client_id = %s, no grant_id", claims, id)
		}
	}
}
