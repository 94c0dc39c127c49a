package data_test

import (
	"fmt"
	"time"

	"oauthd/data"
)

// A refresh token carries its family's ID, so the server finds the family
// with one lookup; only the token's hash is stored, and a presented token is
// compared with it in constant time. Its tag, keyed by the server, says
// whether the server issued it for that family.
func ExampleParseRefreshToken() {
	key := make([]byte, data.RefreshKeySize) // the server's key (keys.Manager.RefreshTokenKey)
	familyID := data.NewFamilyID(time.Now())
	token := data.NewRefreshToken(familyID, 0, key)
	stored := data.Hash(token) // what the Family keeps as TokenHash

	id, ok := data.ParseRefreshToken(token)
	fmt.Println(ok, id == familyID)
	fmt.Println(data.Equal(data.Hash(token), stored))
	fmt.Println(data.CheckRefreshTag(token, key) == data.TagValid)

	_, ok = data.ParseRefreshToken("oauthd_rt_not-a-token")
	fmt.Println(ok)
	// Output:
	// true true
	// true
	// true
	// false
}

// ValidateClient says which rule a client breaks, as a *RuleError that
// unwraps to ErrInvalid.
func ExampleValidateClient() {
	c := data.Client{
		ID: "cl_1", Name: "Example", OwnerID: 1, Type: data.Public,
		RedirectURIs: []string{"http://app.example.com/callback"},
		Scopes:       []string{"BOOKING_READ"},
		Status:       data.StatusPending,
	}
	err := data.ValidateClient(c)
	fmt.Println(err)

	c.RedirectURIs = []string{"http://127.0.0.1:8080/callback"}
	fmt.Println(data.ValidateClient(c))
	// Output:
	// redirect_uri: "http://app.example.com/callback" uses http; use https (http is allowed only on loopback hosts)
	// <nil>
}
