package main

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

// tracingOptions are the tracing flags of serve and gateway.
type tracingOptions struct {
	exporter, endpoint, protocol string
	serviceName                  string
	sampler, samplerArg          string

	defaultService string // "oauthd" or "oauthd-gateway"
	on             bool   // traces are exported: decided once, by check
}

// AddFlags registers the tracing flags; each one's variable is the
// standard OTEL_* name.
func (o *tracingOptions) AddFlags(fs *pflag.FlagSet, defaultService string) {
	o.defaultService = defaultService
	flags := []struct {
		p          *string
		name, env  string
		def, usage string
	}{
		{&o.exporter, "otel-traces-exporter", "OTEL_TRACES_EXPORTER", "",
			"OpenTelemetry traces: otlp (on) or none (off); default: on when an OTLP endpoint is set, else off"},
		{&o.endpoint, "otel-exporter-otlp-endpoint", "OTEL_EXPORTER_OTLP_ENDPOINT", "",
			"the OTLP collector's base URL, e.g. http://127.0.0.1:4318 (http/protobuf) or http://127.0.0.1:4317 (grpc); setting it turns traces on"},
		{&o.protocol, "otel-exporter-otlp-protocol", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf",
			"how spans are sent to the collector: http/protobuf or grpc"},
		{&o.serviceName, "otel-service-name", "OTEL_SERVICE_NAME", "",
			"the service.name of the spans (default " + defaultService + ", or service.name in OTEL_RESOURCE_ATTRIBUTES)"},
		{&o.sampler, "otel-traces-sampler", "OTEL_TRACES_SAMPLER", "parentbased_always_on",
			"which traces are kept: always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio"},
		{&o.samplerArg, "otel-traces-sampler-arg", "OTEL_TRACES_SAMPLER_ARG", "",
			"the ratio of the traceidratio samplers, between 0 and 1 (default 1)"},
	}
	for _, f := range flags {
		fs.StringVar(f.p, f.name, f.def, f.usage)
		_ = fs.SetAnnotation(f.name, annEnv, []string{f.env})
	}
}

// enabled reports whether traces are exported (as check found; false
// before check).
func (o *tracingOptions) enabled() bool { return o.on }

// decide is whether the settings and the environment turn traces on.
func (o *tracingOptions) decide() bool {
	if v, _ := strconv.ParseBool(os.Getenv(envSDKDisabled)); v {
		return false
	}
	switch o.exporter {
	case "otlp":
		return true
	case "none":
		return false
	}
	return o.endpoint != "" || os.Getenv(envTracesEndpoint) != ""
}

// check is every rule of the tracing settings; it also decides, once,
// whether traces are on (enabled).
func (o *tracingOptions) check() error {
	switch o.exporter {
	case "", "otlp", "none":
	default:
		return fmt.Errorf("--otel-traces-exporter (OTEL_TRACES_EXPORTER) %q: use otlp or none (oauthd exports traces over OTLP only)", o.exporter)
	}
	switch o.protocol {
	case "http/protobuf", "grpc":
	default:
		return fmt.Errorf("--otel-exporter-otlp-protocol (OTEL_EXPORTER_OTLP_PROTOCOL) %q: use http/protobuf or grpc", o.protocol)
	}
	if o.endpoint != "" {
		if _, ok := httpURL(o.endpoint); !ok {
			return fmt.Errorf("--otel-exporter-otlp-endpoint (OTEL_EXPORTER_OTLP_ENDPOINT) %q: use an http(s) URL such as http://127.0.0.1:4318", o.endpoint)
		}
	}
	if _, err := o.newSampler(); err != nil {
		return err
	}
	o.on = o.decide()
	return nil
}

// newSampler is the sampler of --otel-traces-sampler (the names and
// defaults of the OpenTelemetry specification's OTEL_TRACES_SAMPLER).
func (o *tracingOptions) newSampler() (sdktrace.Sampler, error) {
	ratio := 1.0
	if o.samplerArg != "" {
		r, err := strconv.ParseFloat(o.samplerArg, 64)
		if err != nil || r < 0 || r > 1 {
			return nil, fmt.Errorf("--otel-traces-sampler-arg (OTEL_TRACES_SAMPLER_ARG) %q: use a ratio between 0 and 1, e.g. 0.1", o.samplerArg)
		}
		ratio = r
	}
	switch o.sampler {
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
		"parentbased_always_on, parentbased_always_off or parentbased_traceidratio", o.sampler)
}

// start installs the global tracer provider and the W3C trace-context
// propagator when traces are on, and returns the function that flushes
// and stops them (a no-op when off). Nothing is sent before the first
// span: a collector that is down costs log lines, never a refused start.
func (o *tracingOptions) start(ctx context.Context, logger *slog.Logger) (stop func(), err error) {
	if !o.enabled() {
		return func() {}, nil
	}
	var exp sdktrace.SpanExporter
	specific := os.Getenv(envTracesEndpoint) != "" // the exporter reads it, and it wins
	if o.protocol == "grpc" {
		var opts []otlptracegrpc.Option
		if o.endpoint != "" && !specific {
			opts = append(opts, otlptracegrpc.WithEndpointURL(o.endpoint))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	} else {
		var opts []otlptracehttp.Option
		if o.endpoint != "" && !specific {
			// The base URL's signal path, as the specification builds it.
			opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimRight(o.endpoint, "/")+"/v1/traces"))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry exporter: %w (check the OTEL_EXPORTER_OTLP_* settings; docs/TRACING.md)", err)
	}
	sampler, err := o.newSampler()
	if err != nil {
		return nil, err
	}
	ropts := []resource.Option{resource.WithAttributes(attribute.String("service.name", o.defaultService)), resource.WithFromEnv()}
	if o.serviceName != "" {
		ropts = append(ropts, resource.WithAttributes(attribute.String("service.name", o.serviceName)))
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
	logger.Info("tracing on", "protocol", o.protocol, "endpoint", cmp.Or(os.Getenv(envTracesEndpoint), o.endpoint, "the exporter's default"))
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(sctx); err != nil {
			logger.Warn("tracing: flush at shutdown: " + err.Error())
		}
	}, nil
}

// handler is h with a server span per request when traces are on
// (traceHandler), else h itself.
func (o *tracingOptions) handler(h http.Handler, name string, trusted []netip.Prefix) http.Handler {
	if !o.enabled() {
		return h
	}
	return traceHandler(h, name, trusted, false)
}

// traceHandler wraps an HTTP server's handler with a server span per
// request (otelhttp). A caller's traceparent is continued only when the
// TCP peer is one of trusted (the --trusted-proxy networks); anyone else's
// starts a new trace that links to it, so that no caller decides what is
// sampled or poses as a parent.
// Spans are named by method (serve's are renamed by route, spanRoute), or
// by method and path when byPath (the admin socket's operations, which
// hold no identifier).
func traceHandler(h http.Handler, name string, trusted []netip.Prefix, byPath bool) http.Handler {
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

// prefixes parses the --trusted-proxy CIDRs (serveOptions.check, which
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
