package verify

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
)

// TracedTransport is http.DefaultTransport with, when traces are on
// (docs/TRACING.md), a client span named name per request ("fetch JWKS")
// and the W3C traceparent sent along. The fetchers of keys and feeds use
// it by default: a fetch inside a traced request is a child of it, a
// background refresh a trace of its own.
func TracedTransport(name string) http.RoundTripper {
	return otelhttp.NewTransport(http.DefaultTransport,
		otelhttp.WithSpanNameFormatter(func(string, *http.Request) string { return name }))
}
