package data

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Traces (docs/TRACING.md). Every package that traces a step names its
// spans with a tracer of the global provider (otel.Tracer), which cmd
// installs when traces are on; no package passes a tracer down.

// StartSpan starts the span prefix+name as a child of ctx's span when
// that span is recording (a traced request), and returns ctx with it.
// Otherwise it returns ctx and a span that does nothing, without building
// the name or allocating: a step outside a traced request (a CLI command,
// the collector's loops, traces off) costs a context look-up.
func StartSpan(ctx context.Context, t trace.Tracer, prefix, name string) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, noSpan
	}
	if prefix != "" {
		name = prefix + name
	}
	return t.Start(ctx, name)
}

// noSpan is the span of no traced request: every method is a no-op.
var noSpan = trace.SpanFromContext(context.Background())

// EndSpan ends span, marking it failed when err is an error other than
// [ErrNotFound] (an answer, not a failure). The error's text is a store's
// or a check's, never a secret.
func EndSpan(span trace.Span, err error) {
	if err != nil && !errors.Is(err, ErrNotFound) && span.IsRecording() {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
