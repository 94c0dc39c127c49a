package issuer

import (
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/data/memory"
)

// TestNewBounds: New takes a code lifetime and a reuse grace up to their
// bounds and refuses one beyond.
func TestNewBounds(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		ok     bool
	}{
		{"defaults", func(*Config) {}, true},
		{"code TTL at the bound", func(c *Config) { c.CodeTTL = MaxCodeTTL }, true},
		{"code TTL beyond", func(c *Config) { c.CodeTTL = MaxCodeTTL + time.Nanosecond }, false},
		{"no grace", func(c *Config) { c.RefreshReuseGrace = 0 }, true},
		{"grace at the bound", func(c *Config) { c.RefreshReuseGrace = MaxRefreshReuseGrace }, true},
		{"grace beyond", func(c *Config) { c.RefreshReuseGrace = MaxRefreshReuseGrace + time.Nanosecond }, false},
		{"negative grace", func(c *Config) { c.RefreshReuseGrace = -time.Second }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Store: memory.New(), Signer: authzFakeSigner{}, Verifier: authzFakeVerifier{},
				MeAuth: func(next echo.HandlerFunc) echo.HandlerFunc { return next }, Issuer: authzTestIssuer}
			tc.mutate(&cfg)
			if _, err := New(cfg); (err == nil) != tc.ok {
				t.Errorf("New = %v; want ok=%v", err, tc.ok)
			}
		})
	}
}
