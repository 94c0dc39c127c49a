package issuer

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"oauthd/keys/verify"
)

// MaxBody bounds every request body (a bigger one is 413
// invalid_request).
const MaxBody = "64K"

// TrustedProxies returns how the source address of a request is found:
// the TCP peer's, never X-Forwarded-For or X-Real-IP (a client could set
// those on every request and slip past the per-address limits), unless
// the peer is one of the proxies named by cidrs: then the nearest address
// in X-Forwarded-For that is not a trusted proxy. Behind a proxy it must
// be named, or every client shares the proxy's address and its limits. A
// CIDR that trusts every address (/0) is refused: any client could name
// its own address. Errors start with the offending CIDR, quoted, for the
// caller to say where it came from.
func TrustedProxies(cidrs []string) (echo.IPExtractor, error) {
	if len(cidrs) == 0 {
		return echo.ExtractIPDirect(), nil
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, c := range cidrs {
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			return nil, fmt.Errorf("%q: %w; use a CIDR such as 10.0.0.5/32", c, err)
		}
		if ones, _ := n.Mask.Size(); ones == 0 {
			return nil, fmt.Errorf("%q trusts every address; name your proxies' addresses, e.g. 10.0.0.5/32", c)
		}
		opts = append(opts, echo.TrustIPRange(n))
	}
	return echo.ExtractIPFromXFFHeader(opts...), nil
}

// machineRoutes are polled by machines (gateways' feed and JWKS fetches,
// probes, scrapers): their request lines are logged at debug, not info,
// unless they fail with a 5xx. A gateway polls the feed every 2 s.
var machineRoutes = map[string]bool{
	"/healthz": true, "/readyz": true, "/metrics": true,
	"/.well-known/jwks.json": true, verify.FeedPath: true, metadataPath: true,
}

// NewEcho returns the Echo app the server's routes are registered on:
// [HTTPErrorHandler] as its one error handler (store outages reported to
// outage, which may be nil), the source address found
// by ipx ([TrustedProxies]), a log line and the oauthd_http_* metrics
// (registered with reg) per request, panic recovery, and bodies of at most
// [MaxBody]. The log line (debug for [machineRoutes], else info) has the path only, never the query, which may
// carry codes or state.
func NewEcho(logger *slog.Logger, reg prometheus.Registerer, ipx echo.IPExtractor, outage *Outage) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = HTTPErrorHandler(logger, outage)
	e.IPExtractor = ipx
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oauthd_http_requests_total", Help: "HTTP requests by method, route and status.",
	}, []string{"method", "route", "status"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "oauthd_http_request_duration_seconds", Help: "HTTP request duration by method and route.",
		Buckets: prometheus.DefBuckets,
	}, []string{"method", "route"})
	reg.MustRegister(requests, duration)
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			if err := next(c); err != nil {
				c.Error(err)
			}
			req, status := c.Request(), c.Response().Status
			route := c.Path()
			if route == "" {
				route = "unmatched"
			}
			d := time.Since(start)
			requests.WithLabelValues(req.Method, route, strconv.Itoa(status)).Inc()
			duration.WithLabelValues(req.Method, route).Observe(d.Seconds())
			level := slog.LevelInfo
			if machineRoutes[route] && status < 500 {
				level = slog.LevelDebug
			}
			logger.LogAttrs(req.Context(), level, "request",
				slog.String("method", req.Method), slog.String("path", req.URL.Path), slog.Int("status", status),
				slog.Duration("duration", d), slog.String("remote_addr", req.RemoteAddr))
			return nil
		}
	})
	e.Use(middleware.Recover())
	e.Use(middleware.BodyLimit(MaxBody))
	return e
}
