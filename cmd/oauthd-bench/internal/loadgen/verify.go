package loadgen

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// VerifyReport is the result of [Verify] (`oauthd-bench --mode verify
// --json`).
type VerifyReport struct {
	Mode              string  `json:"mode"`
	Concurrency       int     `json:"concurrency"`
	DurationS         float64 `json:"duration_s"` // per phase, in Slices alternating slices
	Alg               string  `json:"alg"`
	MiddlewarePerS    float64 `json:"middleware_verifies_per_s"`
	MiddlewareErrors  int64   `json:"middleware_errors"`
	RawPerS           float64 `json:"raw_verifies_per_s"`
	RawErrors         int64   `json:"raw_errors"`
	MiddlewareToRawPc float64 `json:"middleware_to_raw_percent"`
}

// WriteText prints r for a person.
func (r VerifyReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "verify       %s access tokens, %d goroutines, %.1fs per phase\n", r.Alg, r.Concurrency, r.DurationS)
	fmt.Fprintf(w, "middleware   %.0f verifies/s (guard: route match, signature, claims, scope; errors %d)\n", r.MiddlewarePerS, r.MiddlewareErrors)
	fmt.Fprintf(w, "raw %s    %.0f verifies/s (signature only, same key; errors %d)\n", r.Alg, r.RawPerS, r.RawErrors)
	fmt.Fprintf(w, "ratio        %.0f%%\n", r.MiddlewareToRawPc)
	return nil
}

// An Op is one operation of a worker; it reports success. NewOp gives
// each worker its own (its own request and recorder, say), so that
// workers share nothing.
type (
	Op    func() bool
	NewOp func() Op
)

// VerifyRun is what [Verify] compares.
type VerifyRun struct {
	Workers    int
	Duration   time.Duration // per kind, split into Slices slices
	Alg        string        // named in the report and the progress lines
	Middleware NewOp         // a verification through the guard middleware
	Raw        NewOp         // the raw signature check of the same token
	Progress   Progress
}

// Verify runs run.Middleware and run.Raw in Slices alternating
// slices each (so that a change in the machine's load hits both alike)
// and reports both rates and their ratio.
func Verify(ctx context.Context, run VerifyRun) VerifyReport {
	slice := run.Duration / Slices
	var mwOps, mwErr, rawOps, rawErr int64
	var mwTime, rawTime time.Duration
	for i := range Slices {
		n, f, d := Spin(ctx, run.Workers, slice, fmt.Sprintf("middleware %d/%d", i+1, Slices), run.Progress, run.Middleware)
		mwOps, mwErr, mwTime = mwOps+n, mwErr+f, mwTime+d
		n, f, d = Spin(ctx, run.Workers, slice, fmt.Sprintf("raw %s %d/%d", run.Alg, i+1, Slices), run.Progress, run.Raw)
		rawOps, rawErr, rawTime = rawOps+n, rawErr+f, rawTime+d
	}
	mwRate, rawRate := float64(mwOps)/mwTime.Seconds(), float64(rawOps)/rawTime.Seconds()
	rep := VerifyReport{
		Mode: "verify", Concurrency: run.Workers, DurationS: run.Duration.Seconds(), Alg: run.Alg,
		MiddlewarePerS: mwRate, MiddlewareErrors: mwErr, RawPerS: rawRate, RawErrors: rawErr,
	}
	if rawRate > 0 {
		rep.MiddlewareToRawPc = 100 * mwRate / rawRate
	}
	return rep
}

// spinBatch is how many operations a worker runs between looks at the
// clock.
const spinBatch = 64

// Spin runs workers goroutines, each calling the Op newOp gives it, for
// d or until ctx is done, and returns the successes, the failures and the
// time taken. Each worker runs whole batches of 64 operations (at least
// one batch, however short d, unless ctx is done), checking the clock
// only between them.
func Spin(ctx context.Context, workers int, d time.Duration, name string, p Progress, newOp NewOp) (done, failed int64, elapsed time.Duration) {
	var ok, fails atomic.Int64
	start := time.Now()
	deadline := start.Add(d)
	stop := make(chan struct{})
	pwg := p.tick(start, stop, func(now time.Time) {
		fmt.Fprintf(p.W, "bench: %s %5.1fs  %d verifies (%.0f/s)\n", name, now.Sub(start).Seconds(), ok.Load(), float64(ok.Load())/now.Sub(start).Seconds())
	})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			op := newOp()
			for ctx.Err() == nil {
				for range spinBatch {
					if op() {
						ok.Add(1)
					} else {
						fails.Add(1)
					}
				}
				if !time.Now().Before(deadline) {
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed = time.Since(start)
	close(stop)
	pwg.Wait()
	return ok.Load(), fails.Load(), elapsed
}
