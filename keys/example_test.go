package keys_test

import (
	"context"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"oauthd/data/memory"
	"oauthd/keys"
	"oauthd/keys/verify"
)

func Example() {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }

	// On an empty store New creates the active key and the next key.
	m, err := keys.New(ctx, keys.Config{Store: memory.New(), Now: clock, MasterKey: make([]byte, 32)})
	if err != nil {
		panic(err)
	}
	// Sign encodes any JWT claims with encoding/json.
	token, err := m.Sign(jwt.MapClaims{
		"iss": "https://oauthd.example", "aud": "https://oauthd.example", "sub": "42",
		"iat": now.Unix(), "exp": now.Add(30 * time.Minute).Unix(),
	})
	if err != nil {
		panic(err)
	}

	// The manager is the verifier's key source inside the issuer.
	v, _ := verify.New(verify.Config{Issuer: "https://oauthd.example", Keys: m, Now: clock})
	verified, err := v.Verify(ctx, token)
	fmt.Println(verified.Subject, err)

	// Rotate: next → active, active → retired, a new next key.
	now = now.Add(10 * time.Minute)
	if _, err := m.Rotate(ctx, ""); err != nil {
		panic(err)
	}
	list, _ := m.List(ctx)
	for _, k := range list {
		fmt.Println(k.State, k.Alg)
	}
	// Tokens of the retired key still verify until they expire.
	_, err = v.Verify(ctx, token)
	fmt.Println(err)
	// Output:
	// 42 <nil>
	// next ES256
	// active ES256
	// retired ES256
	// <nil>
}
