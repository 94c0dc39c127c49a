package issuer

import (
	"encoding/json"
	"testing"
)

// TestAccessClaimsAppendJSON checks the reflection-free encoding against
// encoding/json, byte for byte.
func TestAccessClaimsAppendJSON(t *testing.T) {
	cases := []accessClaims{
		{Issuer: "https://api.example.com", Subject: "42", Audience: audience{"https://api.example.com"}, ExpiresAt: 1700001800, IssuedAt: 1700000000, ID: "abc_-", ClientID: "c1", Scope: "PROFILE_READ BOOKING_READ"},
		{Issuer: "https://api.example.com", Subject: "1", Audience: audience{"aud"}, ExpiresAt: 1, IssuedAt: 0, ID: "j", ClientID: "legacy", Unrestricted: true},
		{Issuer: "i", Subject: "2", Audience: audience{"a", "https://mcp.example.com/mcp"}, ExpiresAt: 2, ID: "j", ClientID: "spa", GrantID: "g", Scope: "PROFILE_READ", Cnf: &cnf{JKT: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}},
		{Issuer: "i\"<>&\\\n\u2028\x01", Subject: "-7", Audience: audience{"é"}, ExpiresAt: -1, ID: "\xff", ClientID: ""},
		{},
	}
	for _, c := range cases {
		want, err := json.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.AppendJSON([]byte("x")); string(got) != "x"+string(want) {
			t.Errorf("AppendJSON = %s\nwant         x%s", got, want)
		}
	}
}
