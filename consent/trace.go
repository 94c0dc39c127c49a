package consent

import "go.opentelemetry.io/otel"

// tracer names the spans of the login's steps (docs/TRACING.md): "password
// slot wait" (the queue for a password check's slot) and "password check"
// (the hash, and an imported hash's upgrade).
var tracer = otel.Tracer("oauthd/consent")
