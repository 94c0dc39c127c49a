package wiring

import (
	"github.com/prometheus/client_golang/prometheus"

	"oauthd/keys/verify"
)

// registerTokenCacheMetrics exports the verified-token cache of v (the
// verifier behind /v2/me and introspection).
func registerTokenCacheMetrics(reg prometheus.Registerer, v *verify.Verifier) {
	counter := func(name, help string, f func(verify.CacheStats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return f(v.CacheStats()) })
	}
	gauge := func(name, help string, f func(verify.CacheStats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help},
			func() float64 { return f(v.CacheStats()) })
	}
	reg.MustRegister(
		counter("oauthd_token_cache_hits_total", "Access tokens answered from the verified-token cache (no signature check).",
			func(s verify.CacheStats) float64 { return float64(s.Hits) }),
		counter("oauthd_token_cache_misses_total", "Cache lookups that went on to the full verification.",
			func(s verify.CacheStats) float64 { return float64(s.Misses) }),
		counter("oauthd_token_cache_evictions_total", "Cached tokens removed to make room.",
			func(s verify.CacheStats) float64 { return float64(s.Evictions) }),
		counter("oauthd_token_cache_drops_total", "Cached tokens removed because they expired or their signing key is no longer published.",
			func(s verify.CacheStats) float64 { return float64(s.Drops) }),
		gauge("oauthd_token_cache_entries", "Tokens in the verified-token cache.",
			func(s verify.CacheStats) float64 { return float64(s.Entries) }),
		gauge("oauthd_token_cache_bytes", "Memory the verified-token cache accounts for.",
			func(s verify.CacheStats) float64 { return float64(s.Bytes) }),
	)
}
