package issuer

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the issuer's Prometheus metrics.
type metrics struct {
	tokenRequests *prometheus.CounterVec   // grant_type, result
	tokenDuration *prometheus.HistogramVec // grant_type
	refreshReuse  prometheus.Counter
	// refreshForged counts refresh tokens never issued for the family
	// they name (refused, nothing changed); refreshGrace the rotations by
	// the previous token within the reuse grace; refreshNarrowed the
	// rotations that dropped scopes the client lost (result "narrowed")
	// and the grants revoked for having none left ("revoked").
	refreshForged prometheus.Counter
	refreshGrace  prometheus.Counter
	// refreshAhead counts rotations by a token issued after the stored
	// state (a restored backup): docs/SECURITY.md.
	refreshAhead    prometheus.Counter
	dpopRefused     prometheus.Counter // token requests refused for their DPoP proof
	refreshNarrowed *prometheus.CounterVec
	// grantRefused counts access tokens refused by /v2/me and introspection
	// because their grant is revoked or their client no longer approved.
	grantRefused prometheus.Counter
}

// newMetrics creates the metrics and registers them on reg when it is not
// nil. A collector already registered (a second Server on the same
// registry) is shared.
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		tokenRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oauthd_token_requests_total",
			Help: "Token endpoint requests by grant type and result (ok or the OAuth error code).",
		}, []string{"grant_type", "result"}),
		tokenDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "oauthd_token_request_duration_seconds",
			Help:    "Time to answer a token endpoint request, by grant type.",
			Buckets: prometheus.DefBuckets,
		}, []string{"grant_type"}),
		refreshReuse: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oauthd_refresh_reuse_detected_total",
			Help: "Refresh tokens the family issued earlier, presented again (outside the reuse grace); each revoked its family.",
		}),
		refreshForged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oauthd_refresh_forged_total",
			Help: "Refresh tokens refused as never issued for the family they name (bad tag, or an unknown untagged token on a tagged family); nothing was changed.",
		}),
		refreshGrace: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oauthd_refresh_reuse_grace_total",
			Help: "Rotations by the immediately previous refresh token within --refresh-reuse-grace (a lost response), instead of a revocation.",
		}),
		refreshAhead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oauthd_refresh_after_restore_total",
			Help: "Rotations by a refresh token issued after the state the store holds (a restored backup): accepted once, the family moved forward to it.",
		}),
		refreshNarrowed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oauthd_refresh_narrowed_total",
			Help: "Refreshes of grants whose client lost scopes: narrowed (the grant keeps the rest) or revoked (none left).",
		}, []string{"result"}),
		dpopRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oauthd_dpop_proof_refused_total",
			Help: "Token requests refused for an invalid DPoP proof (malformed, wrong htm/htu, outside the iat window, replayed jti).",
		}),
		grantRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "oauthd_access_token_grant_revoked_total",
			Help: "Access tokens refused at /v2/me or introspection because their grant was revoked or their client is no longer approved.",
		}),
	}
	if reg != nil {
		m.tokenRequests = registerCollector(reg, m.tokenRequests)
		m.tokenDuration = registerCollector(reg, m.tokenDuration)
		m.refreshReuse = registerCollector(reg, m.refreshReuse)
		m.refreshForged = registerCollector(reg, m.refreshForged)
		m.refreshGrace = registerCollector(reg, m.refreshGrace)
		m.refreshAhead = registerCollector(reg, m.refreshAhead)
		m.refreshNarrowed = registerCollector(reg, m.refreshNarrowed)
		m.grantRefused = registerCollector(reg, m.grantRefused)
		m.dpopRefused = registerCollector(reg, m.dpopRefused)
	}
	return m
}

// registerCollector registers c on reg, or returns the collector already there.
func registerCollector[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}
