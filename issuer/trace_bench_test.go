package issuer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"oauthd/data"
	"oauthd/data/memory"
)

// BenchmarkTokenRefreshTraced is BenchmarkTokenRefreshMem and
// BenchmarkTokenRefreshProd/serial with traces on as serve turns them on
// (docs/TRACING.md): every request sampled, a server span from otelhttp,
// the spans batched to an exporter that drops them. It installs the
// process's global tracer provider, which every benchmark after it in the
// same run then also pays for: run it alone (-bench TokenRefreshTraced).
// The figures with traces off are the two benchmarks it mirrors.
func BenchmarkTokenRefreshTraced(b *testing.B) {
	installTracing()
	run := func(b *testing.B, env *prodEnv) {
		h := otelhttp.NewHandler(env.e, "oauthd")
		rt := benchTracedPost(b, h, env.codeBody(env.code(b)))
		b.ReportAllocs()
		for b.Loop() {
			rt = benchTracedPost(b, h, env.refreshBody(rt))
		}
	}
	b.Run("mem", func(b *testing.B) { run(b, newProdEnvOn(b, memory.New())) })
	b.Run("prod", func(b *testing.B) { run(b, newProdEnv(b)) })
}

var installTracing = sync.OnceFunc(func() {
	otel.SetTracerProvider(sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(discardExporter{}), sdktrace.WithSampler(sdktrace.AlwaysSample())))
})

// discardExporter is an exporter that drops every span.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// benchTracedPost is benchTokenPost through h.
func benchTracedPost(b *testing.B, h http.Handler, body string) string {
	req := httptest.NewRequest(http.MethodPost, "/v2/auth/oauth2/token", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	out := rec.Body.String()
	i := strings.Index(out, data.PrefixRefreshToken)
	j := strings.IndexByte(out[i:], '"')
	return out[i : i+j]
}
