package wiring

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/spf13/pflag"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// OpenTelemetry traces (docs/TRACING.md): off unless an OTLP endpoint or
// exporter is set. Each setting is a flag of serve and gateway whose
// environment variable is the standard OTEL_* one, so the variables an
// operator already sets for every other service work here, and the file
// keys serve.otel-* and gateway.otel-* do too. The exporter reads the
// variables that have no flag (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
// _CERTIFICATE, _COMPRESSION, the OTEL_EXPORTER_OTLP_TRACES_* ones) and the
// batch processor its OTEL_BSP_* ones, as the SDK documents.

// Environment variables read directly (they have no flag).
const (
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envSDKDisabled    = "OTEL_SDK_DISABLED"
)

// Tracing are the tracing flags of serve and gateway.
type Tracing struct {
	Exporter, Endpoint, Protocol string
	ServiceName                  string
	Sampler, SamplerArg          string

	defaultService string // "oauthd" or "oauthd-gateway"
	on             bool   // traces are exported: decided once, by Check
}

// AddFlags registers the tracing flags; each one's variable is the
// standard OTEL_* name.
func (o *Tracing) AddFlags(fs *pflag.FlagSet, defaultService string) {
	o.defaultService = defaultService
	flags := []struct {
		p          *string
		name, env  string
		def, usage string
	}{
		{&o.Exporter, "otel-traces-exporter", "OTEL_TRACES_EXPORTER", "",
			"OpenTelemetry traces: otlp (on) or none (off); default: on when an OTLP endpoint is set, else off"},
		{&o.Endpoint, "otel-exporter-otlp-endpoint", "OTEL_EXPORTER_OTLP_ENDPOINT", "",
			"the OTLP collector's base URL, e.g. http://127.0.0.1:4318 (http/protobuf) or http://127.0.0.1:4317 (grpc); setting it turns traces on"},
		{&o.Protocol, "otel-exporter-otlp-protocol", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf",
			"how spans are sent to the collector: http/protobuf or grpc"},
		{&o.ServiceName, "otel-service-name", "OTEL_SERVICE_NAME", "",
			"the service.name of the spans (default " + defaultService + ", or service.name in OTEL_RESOURCE_ATTRIBUTES)"},
		{&o.Sampler, "otel-traces-sampler", "OTEL_TRACES_SAMPLER", "parentbased_always_on",
			"which traces are kept: always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio"},
		{&o.SamplerArg, "otel-traces-sampler-arg", "OTEL_TRACES_SAMPLER_ARG", "",
			"the ratio of the traceidratio samplers, between 0 and 1 (default 1)"},
	}
	for _, f := range flags {
		fs.StringVar(f.p, f.name, f.def, f.usage)
		_ = fs.SetAnnotation(f.name, AnnEnv, []string{f.env})
	}
}

// Enabled reports whether traces are exported (as Check found; false
// before Check).
func (o *Tracing) Enabled() bool { return o.on }

// decide is whether the settings and the environment turn traces on.
func (o *Tracing) decide() bool {
	if v, _ := strconv.ParseBool(os.Getenv(envSDKDisabled)); v {
		return false
	}
	switch o.Exporter {
	case "otlp":
		return true
	case "none":
		return false
	}
	return o.Endpoint != "" || os.Getenv(envTracesEndpoint) != ""
}

// Check is every rule of the tracing settings; it also decides, once,
// whether traces are on (Enabled).
func (o *Tracing) Check() error {
	switch o.Exporter {
	case "", "otlp", "none":
	default:
		return fmt.Errorf("--otel-traces-exporter (OTEL_TRACES_EXPORTER) %q: use otlp or none (oauthd exports traces over OTLP only)", o.Exporter)
	}
	switch o.Protocol {
	case "http/protobuf", "grpc":
	default:
		return fmt.Errorf("--otel-exporter-otlp-protocol (OTEL_EXPORTER_OTLP_PROTOCOL) %q: use http/protobuf or grpc", o.Protocol)
	}
	if o.Endpoint != "" {
		if _, ok := HTTPURL(o.Endpoint); !ok {
			return fmt.Errorf("--otel-exporter-otlp-endpoint (OTEL_EXPORTER_OTLP_ENDPOINT) %q: use an http(s) URL such as http://127.0.0.1:4318", o.Endpoint)
		}
	}
	if _, err := o.NewSampler(); err != nil {
		return err
	}
	o.on = o.decide()
	return nil
}

// NewSampler is the sampler of --otel-traces-sampler (the names and
// defaults of the OpenTelemetry specification's OTEL_TRACES_SAMPLER).
func (o *Tracing) NewSampler() (sdktrace.Sampler, error) {
	ratio := 1.0
	if o.SamplerArg != "" {
		r, err := strconv.ParseFloat(o.SamplerArg, 64)
		if err != nil || r < 0 || r > 1 {
			return nil, fmt.Errorf("--otel-traces-sampler-arg (OTEL_TRACES_SAMPLER_ARG) %q: use a ratio between 0 and 1, e.g. 0.1", o.SamplerArg)
		}
		ratio = r
	}
	switch o.Sampler {
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio), nil
	case "parentbased_always_on", "":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)), nil
	}
	return nil, fmt.Errorf("--otel-traces-sampler (OTEL_TRACES_SAMPLER) %q: use always_on, always_off, traceidratio, "+
		"parentbased_always_on, parentbased_always_off or parentbased_traceidratio", o.Sampler)
}

// Start installs the global tracer provider and the W3C trace-context
// propagator when traces are on, and returns the function that flushes
// and stops them (a no-op when off). Nothing is sent before the first
// span: a collector that is down costs log lines, never a refused start.
func (o *Tracing) Start(ctx context.Context, logger *slog.Logger) (stop func(), err error) {
	if !o.Enabled() {
		return func() {}, nil
	}
	var exp sdktrace.SpanExporter
	specific := os.Getenv(envTracesEndpoint) != "" // the exporter reads it, and it wins
	if o.Protocol == "grpc" {
		var opts []otlptracegrpc.Option
		if o.Endpoint != "" && !specific {
			opts = append(opts, otlptracegrpc.WithEndpointURL(o.Endpoint))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	} else {
		var opts []otlptracehttp.Option
		if o.Endpoint != "" && !specific {
			// The base URL's signal path, as the specification builds it.
			opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimRight(o.Endpoint, "/")+"/v1/traces"))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry exporter: %w (check the OTEL_EXPORTER_OTLP_* settings; docs/TRACING.md)", err)
	}
	sampler, err := o.NewSampler()
	if err != nil {
		return nil, err
	}
	ropts := []resource.Option{resource.WithAttributes(attribute.String("service.name", o.defaultService)), resource.WithFromEnv()}
	if o.ServiceName != "" {
		ropts = append(ropts, resource.WithAttributes(attribute.String("service.name", o.ServiceName)))
	}
	res, err := resource.New(ctx, ropts...)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry resource (OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithSampler(sampler))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("tracing: "+err.Error(), "hint", "check that the OTLP collector at OTEL_EXPORTER_OTLP_ENDPOINT answers")
	}))
	logger.Info("tracing on", "protocol", o.Protocol, "endpoint", cmp.Or(os.Getenv(envTracesEndpoint), o.Endpoint, "the exporter's default"))
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			logger.Warn("tracing: flush at Shutdown: " + err.Error())
		}
	}, nil
}

// Handler is h with a server span per request when traces are on
// (TraceHandler), else h itself.
func (o *Tracing) Handler(h http.Handler, name string, trusted []netip.Prefix) http.Handler {
	if !o.Enabled() {
		return h
	}
	return TraceHandler(h, name, trusted, false)
}

// TraceHandler wraps an HTTP server's handler with a server span per
// request (otelhttp). A caller's traceparent is continued only when the
// TCP peer is one of trusted (the --trusted-proxy networks); anyone else's
// starts a new trace that links to it, so that no caller decides what is
// sampled or poses as a parent.
// Spans are named by method (serve's are renamed by route, spanRoute), or
// by method and path when byPath (the admin socket's operations, which
// hold no identifier).
func TraceHandler(h http.Handler, name string, trusted []netip.Prefix, byPath bool) http.Handler {
	return otelhttp.NewHandler(h, name,
		otelhttp.WithPublicEndpointFn(func(r *http.Request) bool { return !peerIn(r.RemoteAddr, trusted) }),
		otelhttp.WithSpanNameFormatter(func(op string, r *http.Request) string {
			if byPath {
				return op + " " + r.Method + " " + r.URL.Path
			}
			return r.Method
		}))
}

// peerIn reports whether the address host:port is in one of nets.
func peerIn(addr string, nets []netip.Prefix) bool {
	if len(nets) == 0 {
		return false
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return false
	}
	for _, n := range nets {
		if n.Contains(ap.Addr().Unmap()) {
			return true
		}
	}
	return false
}

// prefixes parses the --trusted-proxy CIDRs (ServeOptions.Check, which
// checks them first).
func prefixes(cidrs []string) []netip.Prefix {
	var out []netip.Prefix
	for _, c := range cidrs {
		if _, n, err := net.ParseCIDR(c); err == nil {
			p, _ := netip.ParsePrefix(n.String())
			out = append(out, p)
		}
	}
	return out
}

// spanRoute names the request's server span after its route ("POST
// /v2/auth/oauth2/token"), known once Echo has routed it.
func spanRoute(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if span := trace.SpanFromContext(c.Request().Context()); span.IsRecording() && c.Path() != "" {
			span.SetName(c.Request().Method + " " + c.Path())
			span.SetAttributes(attribute.String("http.route", c.Path()))
		}
		return next(c)
	}
}
