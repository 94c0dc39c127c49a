package main

import (
	"strings"
	"testing"
)

// TestConfigPrintMasksURLTokens: `config print` is what an operator pastes
// into a ticket. The attack: a platform JWKS URL, login URL or gateway
// feed URL carrying its credential in the query (?token=, ?api_key=,
// ?sig=, ?access_token=) was printed as it is; only a password in the
// userinfo and PostgreSQL's password parameters were masked.
func TestConfigPrintMasksURLTokens(t *testing.T) {
	for _, tc := range []struct{ in, secret string }{
		{"https://platform.example/jwks.json?token=tok123", "tok123"},
		{"https://platform.example/login?api_key=key123&next=/x", "key123"},
		{"https://feed.example/revocations?X-Amz-Signature=sig123", "sig123"},
		{"https://feed.example/r?access_token=at123", "at123"},
		{"https://feed.example/r?client_secret=cs123", "cs123"},
		{"https://u:pw123@platform.example/jwks.json", "pw123"},
		{"postgres://bob:pw123@h/db?sslpassword=ssl123", "ssl123"},
	} {
		got := maskURL(tc.in)
		if strings.Contains(got, tc.secret) {
			t.Errorf("maskURL(%q) = %q; shows the secret", tc.in, got)
		}
	}
	// What is not a secret stays readable.
	if got := maskURL("https://platform.example/login?next=/home&tenant=acme"); got != "https://platform.example/login?next=/home&tenant=acme" {
		t.Errorf("maskURL changed a URL without a secret: %q", got)
	}
}
