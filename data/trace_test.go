package data

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"
)

// TestStartSpan: a step's span is a child of a recording span, named
// prefix+name, failed on an error other than ErrNotFound; outside a
// recording span it is none at all.
func TestStartSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	ctx, parent := tr.Start(context.Background(), "request")
	_, s1 := StartSpan(ctx, tr, "bolt ", "get client")
	EndSpan(s1, ErrNotFound)
	_, s2 := StartSpan(ctx, tr, "", "sign")
	EndSpan(s2, errors.New("boom"))
	parent.End()
	// Outside a recording span: nothing is recorded.
	if _, s := StartSpan(context.Background(), tr, "bolt ", "x"); s.IsRecording() || s.SpanContext().IsValid() {
		t.Errorf("a span outside a traced request: %v", s)
	}
	unsampled, _ := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())).Tracer("t").Start(context.Background(), "r")
	if _, s := StartSpan(unsampled, tr, "bolt ", "x"); s.IsRecording() {
		t.Errorf("a span under an unsampled request is recording")
	}
	ended := rec.Ended()
	if len(ended) != 3 {
		t.Fatalf("%d spans ended; want 3", len(ended))
	}
	for i, want := range []struct {
		name string
		code codes.Code
	}{{"bolt get client", codes.Unset}, {"sign", codes.Error}} {
		s := ended[i]
		if s.Name() != want.name || s.Status().Code != want.code || s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("span %d: %q %v parent %v; want %q %v under the request", i, s.Name(), s.Status().Code, s.Parent().SpanID(), want.name, want.code)
		}
	}
}

// BenchmarkStartSpan is what one traced step costs: "off" outside a
// recording span (traces off, the case of every request by default),
// "on" under one with the SDK.
func BenchmarkStartSpan(b *testing.B) {
	b.Run("off", func(b *testing.B) {
		tr := noop.NewTracerProvider().Tracer("bench")
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			_, s := StartSpan(ctx, tr, "bolt ", "rotate refresh token")
			EndSpan(s, nil)
		}
	})
	b.Run("on", func(b *testing.B) {
		tr := sdktrace.NewTracerProvider().Tracer("bench") // spans recorded, then dropped
		ctx, _ := tr.Start(context.Background(), "request")
		b.ReportAllocs()
		for b.Loop() {
			_, s := StartSpan(ctx, tr, "bolt ", "rotate refresh token")
			EndSpan(s, nil)
		}
	})
}
