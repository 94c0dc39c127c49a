package loadgen

import (
	"context"
	"sync/atomic"
	"testing"
)

// TestVerify runs with a zero duration: every slice is one batch of 64
// operations per worker, so the counts are exact. The middleware fails
// every other call; the raw check never does.
func TestVerify(t *testing.T) {
	const workers = 3
	var mwOps, rawOps atomic.Int64
	rep := Verify(t.Context(), VerifyRun{Workers: workers, Alg: "ES256",
		Middleware: func() Op {
			mwOps.Add(1)
			n := 0
			return func() bool { n++; return n%2 == 1 }
		},
		Raw: func() Op {
			rawOps.Add(1)
			return func() bool { return true }
		},
	})
	if got, want := mwOps.Load(), int64(workers*Slices); got != want || rawOps.Load() != want {
		t.Errorf("NewOp called %d and %d times; want %d each (one Op per worker and slice)", got, rawOps.Load(), want)
	}
	const perKind = workers * Slices * spinBatch
	if rep.MiddlewareErrors != perKind/2 || rep.RawErrors != 0 {
		t.Errorf("errors %d and %d; want %d and 0", rep.MiddlewareErrors, rep.RawErrors, perKind/2)
	}
	if rep.Mode != "verify" || rep.Alg != "ES256" || rep.Concurrency != workers || rep.MiddlewarePerS <= 0 || rep.RawPerS <= 0 {
		t.Errorf("report %+v", rep)
	}
	if got := 100 * rep.MiddlewarePerS / rep.RawPerS; rep.MiddlewareToRawPc != got {
		t.Errorf("ratio %v; want %v", rep.MiddlewareToRawPc, got)
	}
}

// TestSpinStopsOnContext: a done context runs no operation.
func TestSpinStopsOnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	done, failed, _ := Spin(ctx, 4, 1<<62, "x", Progress{}, func() Op { return func() bool { return true } })
	if done != 0 || failed != 0 {
		t.Errorf("Spin on a done context = %d, %d; want 0, 0", done, failed)
	}
}
