package verify_test

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"oauthd/keys/verify"
)

// oneKey is a KeySource with a single Ed25519 key, as a resource server
// might configure it in a test; in production use [verify.RemoteKeySet].
type oneKey struct {
	kid string
	pub ed25519.PublicKey
}

func (k oneKey) Key(_ context.Context, kid string) (crypto.PublicKey, string, error) {
	if kid != k.kid {
		return nil, "", verify.ErrUnknownKey
	}
	return k.pub, verify.EdDSA, nil
}

func Example() {
	// The issuer's key (normally only the issuer holds it).
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
		"iss": "https://oauthd.example", "aud": "https://oauthd.example", "sub": "42",
		"client_id": "app-1", "scope": "BOOKING_READ PROFILE_READ", "jti": "t-1",
		"iat": now.Unix(), "exp": now.Add(30 * time.Minute).Unix(),
	})
	tok.Header["kid"], tok.Header["typ"] = "k1", "at+jwt"
	token, _ := tok.SignedString(priv)

	v, err := verify.New(verify.Config{
		Issuer: "https://oauthd.example",
		Keys:   oneKey{kid: "k1", pub: priv.Public().(ed25519.PublicKey)},
		Now:    func() time.Time { return now.Add(time.Minute) },
	})
	if err != nil {
		panic(err)
	}
	claims, err := v.Verify(context.Background(), token)
	if err != nil {
		fmt.Println("rejected:", err)
		return
	}
	fmt.Println(claims.Subject, claims.ClientID, claims.Scopes, claims.Unrestricted)

	_, err = v.Verify(context.Background(), token+"x")
	fmt.Println(err)
	// Output:
	// 42 app-1 [BOOKING_READ PROFILE_READ] false
	// invalid token: malformed
}

func ExampleNewRemoteKeySet() {
	keys := verify.NewRemoteKeySet(verify.RemoteConfig{
		URL:        "https://oauthd.example/.well-known/jwks.json",
		MinRefresh: 10 * time.Second,
	})
	v, err := verify.New(verify.Config{Issuer: "https://oauthd.example", Keys: keys})
	if err != nil {
		panic(err)
	}
	_ = v // v.Verify(ctx, bearerToken) in each request
}
