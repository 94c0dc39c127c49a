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

// roomDisplaySignIn is docs/MACHINES.md's device flow example: the
// display asks for a code, shows it, and polls until the user answers.
func roomDisplaySignIn(ctx context.Context, base, clientID string, show func(code, uri string)) (*oauth2.Token, error) {
	cfg := &oauth2.Config{
		ClientID: clientID, // a public client: no secret on the device
		Scopes:   []string{"BOOKING_READ"},
		Endpoint: oauth2.Endpoint{
			DeviceAuthURL: base + "/v2/auth/oauth2/device_authorization",
			TokenURL:      base + "/v2/auth/oauth2/token",
			AuthStyle:     oauth2.AuthStyleInParams,
		},
	}
	da, err := cfg.DeviceAuth(ctx)
	if err != nil {
		return nil, err
	}
	// On the screen: "Go to https://app.example.com/device and enter
	// BCDF-GHJK", or a QR code of da.VerificationURIComplete.
	show(da.UserCode, da.VerificationURIComplete)
	// Polls every da.Interval seconds (slower after slow_down) until the
	// user allows (tokens, a refresh token included), denies
	// (access_denied) or the code expires (expired_token, after 10 min).
	return cfg.DeviceAccessToken(ctx, da)
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

	dev := devEnv(t)
	dsrv := httptest.NewServer(dev.e)
	t.Cleanup(dsrv.Close)
	tok, err = roomDisplaySignIn(context.Background(), dsrv.URL, "tv", func(code, uri string) {
		// The user, on their phone, allows.
		if err := dev.s.ApproveDevice(context.Background(), code, Login{UserID: tkUser}); err != nil {
			t.Error(err)
		}
	})
	if err != nil || tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Fatalf("roomDisplaySignIn = %+v, %v", tok, err)
	}

	doc, err := os.ReadFile("../docs/MACHINES.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("machines_doc_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"func backendToken(", "func clientAssertion(", "func assertionForm(", "func roomDisplaySignIn("} {
		start := strings.Index(string(src), name)
		end := strings.Index(string(src)[start:], "\n}\n")
		fn := string(src)[start : start+end+2]
		if !strings.Contains(string(doc), fn) {
			t.Errorf("docs/MACHINES.md does not quote %s as it is in issuer/machines_doc_test.go:\n%s", name, fn)
		}
	}
}
