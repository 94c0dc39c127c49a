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
			Help: "Refresh tokens presented after rotation; each revoked its family.",
		}),
	}
	if reg != nil {
		m.tokenRequests = registerCollector(reg, m.tokenRequests)
		m.tokenDuration = registerCollector(reg, m.tokenDuration)
		m.refreshReuse = registerCollector(reg, m.refreshReuse)
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

// grantLabel bounds the grant_type label to the known values.
func grantLabel(gt string) string {
	switch gt {
	case "authorization_code", "refresh_token":
		return gt
	case "":
		return "none"
	}
	return "other"
}
