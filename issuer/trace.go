package issuer

import "go.opentelemetry.io/otel"

// tracer names the spans of a grant's steps (docs/TRACING.md): "client
// authentication", "sign access token", "id token"; the store's spans and
// the request's server span (cmd) are around and under them.
var tracer = otel.Tracer("oauthd/issuer")
