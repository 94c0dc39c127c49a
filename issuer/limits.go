package issuer

import "time"

// Bounds of [Config] that [New] enforces.
const (
	// MaxCodeTTL bounds Config.CodeTTL: an authorization code must be
	// short-lived, 10 minutes at most (RFC 6749 §4.1.2).
	MaxCodeTTL = 10 * time.Minute
	// MaxRefreshReuseGrace bounds Config.RefreshReuseGrace: a longer grace
	// keeps the previous refresh token as good as the current one for too
	// long (Hydra caps its own at 5 minutes).
	MaxRefreshReuseGrace = 5 * time.Minute
)

// Defaults of [Config] (and of serve's flags, docs/CONFIG.md).
const (
	// DefaultCodeTTL is Config.CodeTTL's default.
	DefaultCodeTTL = time.Minute
	// DefaultRefreshIdle is Config.RefreshIdle's default (30 days).
	DefaultRefreshIdle = 720 * time.Hour
	// DefaultRefreshMax is Config.RefreshMax's default (365 days).
	DefaultRefreshMax = 8760 * time.Hour
	// DefaultRefreshReuseGrace is serve's default Config.RefreshReuseGrace
	// (docs/SECURITY.md, "Grants: what a decision reaches"); the Config's own is 0.
	DefaultRefreshReuseGrace = 30 * time.Second
)
