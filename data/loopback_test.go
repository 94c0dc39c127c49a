package data

import "testing"

func TestRedirectURIMatchesLoopback(t *testing.T) {
	reg := []string{"http://127.0.0.1/callback", "http://[::1]:9000/cb?x=1", "http://localhost/cb", "https://app.example.com/cb"}
	tests := []struct {
		uri          string
		public, conf bool
	}{
		{"http://127.0.0.1/callback", true, true},
		{"http://127.0.0.1:53123/callback", true, false},
		{"http://127.0.0.1:1/callback", true, false},
		{"http://127.0.0.1:65535/callback", true, false},
		{"http://[::1]:9000/cb?x=1", true, true},
		{"http://[::1]/cb?x=1", true, false},
		{"http://[::1]:40001/cb?x=1", true, false},
		// Only the port is free.
		{"http://127.0.0.1:53123/callback/", false, false},
		{"http://127.0.0.1:53123/Callback", false, false},
		{"http://127.0.0.1:53123/callback?x=1", false, false},
		{"http://127.0.0.1:53123", false, false},
		{"http://[::1]:40001/cb", false, false},
		{"http://127.0.0.2:53123/callback", false, false},
		{"http://127.0.0.1:65536/callback", false, false},
		{"http://127.0.0.1:0/callback", false, false},
		{"http://127.0.0.1:080/callback", false, false},
		{"http://127.0.0.1:/callback", false, false},
		{"http://127.0.0.1:123456/callback", false, false},
		{"http://127.0.0.1:80@evil.example/callback", false, false},
		{"http://127.0.0.1.evil.example/callback", false, false},
		{"http://127.0.0.1:8080.evil.example/callback", false, false},
		{"https://127.0.0.1:53123/callback", false, false},
		{"HTTP://127.0.0.1:53123/callback", false, false},
		{"http://[0:0:0:0:0:0:0:1]:40001/cb?x=1", false, false},
		// localhost stays exact (RFC 8252 §8.3); other hosts too.
		{"http://localhost/cb", true, true},
		{"http://localhost:3000/cb", false, false},
		{"https://app.example.com:8443/cb", false, false},
	}
	for _, tc := range tests {
		if got := RedirectURIMatches(reg, tc.uri, true); got != tc.public {
			t.Errorf("public client: RedirectURIMatches(%q) = %v; want %v", tc.uri, got, tc.public)
		}
		if got := RedirectURIMatches(reg, tc.uri, false); got != tc.conf {
			t.Errorf("confidential client: RedirectURIMatches(%q) = %v; want %v", tc.uri, got, tc.conf)
		}
	}
}
