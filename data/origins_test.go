package data_test

import (
	"slices"
	"testing"

	"oauthd/data"
)

func TestAllowedOrigins(t *testing.T) {
	tests := []struct {
		name string
		c    data.Client
		want []string
	}{
		{"confidential gets none", data.Client{Type: data.Confidential, RedirectURIs: []string{"https://app.example.com/cb"}}, nil},
		{"public: origins of its web redirect URIs", data.Client{Type: data.Public, RedirectURIs: []string{
			"https://App.Example.com/cb", "https://app.example.com:443/other", "http://127.0.0.1:5173/cb",
			"com.example.app:/oauth", "http://localhost:80/x", "https://[::1]:8443/cb",
		}}, []string{"http://127.0.0.1:5173", "http://localhost", "https://[::1]:8443", "https://app.example.com"}},
		{"public without web redirect URIs", data.Client{Type: data.Public, RedirectURIs: []string{"com.example.app:/oauth"}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := data.AllowedOrigins(tc.c); !slices.Equal(got, tc.want) {
				t.Fatalf("AllowedOrigins = %q; want %q", got, tc.want)
			}
		})
	}
}
