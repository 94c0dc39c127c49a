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
