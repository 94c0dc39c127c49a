package issuer

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// backendToken is docs/MACHINES.md's client_credentials example.
func backendToken(ctx context.Context, tokenURL, clientID, secret string) (*oauth2.Token, error) {
	cfg := clientcredentials.Config{
		ClientID:     clientID,
		ClientSecret: secret,
		TokenURL:     tokenURL, // https://api.example.com/v2/auth/oauth2/token
		Scopes:       []string{"BOOKING_READ"},
	}
	return cfg.Token(ctx) // no refresh token: ask again when it expires
}

// clientAssertion is docs/MACHINES.md's private_key_jwt example: a
// short-lived assertion, a new jti every time.
func clientAssertion(key *ecdsa.PrivateKey, kid, clientID, issuer string, now time.Time) (string, error) {
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": clientID,
		"sub": clientID,
		"aud": issuer, // or the endpoint's URL
		"iat": now.Unix(),
		"exp": now.Add(time.Minute).Unix(),
		"jti": rand.Text(),
	})
	tok.Header["kid"] = kid // the kid of the registered public key
	return tok.SignedString(key)
}

// assertionForm is the token request that carries it.
func assertionForm(assertion string) url.Values {
	return url.Values{
		"grant_type":            {"client_credentials"},
		"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
		"client_assertion":      {assertion},
	}
}

// TestMachinesDocExamples runs the examples of docs/MACHINES.md and checks
// that the document quotes them as they are here.
func TestMachinesDocExamples(t *testing.T) {
	env := ccEnv(t)
	srv := httptest.NewServer(env.e)
	t.Cleanup(srv.Close)
	tok, err := backendToken(context.Background(), srv.URL+tokenEndpointPath, "machine", env.secretA)
	if err != nil || tok.AccessToken == "" || tok.RefreshToken != "" {
		t.Fatalf("backendToken = %+v, %v", tok, err)
	}
	pk := newPKEnv(t)
	a, err := clientAssertion(pk.key, "k1", "signer", tkIssuer, pk.clock())
	if err != nil {
		t.Fatal(err)
	}
	pk.mustTokens(pk.do(tkReq{body: assertionForm(a).Encode()}))

	doc, err := os.ReadFile("../docs/MACHINES.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("machines_doc_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"func backendToken(", "func clientAssertion(", "func assertionForm("} {
		start := strings.Index(string(src), name)
		end := strings.Index(string(src)[start:], "\n}\n")
		fn := string(src)[start : start+end+2]
		if !strings.Contains(string(doc), fn) {
			t.Errorf("docs/MACHINES.md does not quote %s as it is in issuer/machines_doc_test.go:\n%s", name, fn)
		}
	}
}
