package handover_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"oauthd/consent/handover"
)

// TestKeysErrorHidesURLCredentials: the platform's JWKS URL may carry its
// credential (user:password@, ?token=). The attack: make the platform's
// JWKS fail (down, garbage, unreachable); the error, which serve prints
// at start and logs on each failed refresh, held the URL as configured.
func TestKeysErrorHidesURLCredentials(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("not a key set"))
	}))
	defer garbage.Close()
	hostOf := func(u string) string { return strings.TrimPrefix(u, "http://") }
	for _, keys := range []string{
		"http://plat:pw-SECRET1@" + hostOf(down.URL) + "/jwks?token=SECRET2",
		"http://plat:pw-SECRET1@" + hostOf(garbage.URL) + "/jwks?token=SECRET2",
		"http://plat:pw-SECRET1@127.0.0.1:1/jwks?token=SECRET2",
	} {
		_, err := handover.New(t.Context(), handover.Config{Issuer: "https://plat.example", Audience: "oauthd", Keys: keys})
		if err == nil {
			t.Fatalf("New(%s) = nil error", keys)
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("New(%s) error shows a credential: %v", keys, err)
		}
		if !strings.Contains(err.Error(), "/jwks") {
			t.Errorf("New(%s) error does not say which URL: %v", keys, err)
		}
	}
}
