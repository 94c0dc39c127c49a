package loadgen

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// CodeReport is the result of [Endpoint.CodeVsRefresh] (`oauthd-bench
// --mode code --json`): authorization_code exchanges against refresh
// grants on the same server, in alternating slices.
type CodeReport struct {
	Mode           string           `json:"mode"`
	Concurrency    int              `json:"concurrency"`
	DurationS      float64          `json:"duration_s"` // per kind, in Slices slices each
	CodesPerS      float64          `json:"code_exchanges_per_s"`
	CodeOK         int64            `json:"code_ok"`
	CodeErrors     int64            `json:"code_errors"`
	CodeLatencyMS  LatencyMS        `json:"code_latency_ms"`
	CodeFailures   map[string]int64 `json:"code_failures"` // by "status error", "net" for transport errors
	GrantsPerS     float64          `json:"refresh_grants_per_s"`
	RefreshOK      int64            `json:"refresh_ok"`
	RefreshErrors  int64            `json:"refresh_errors"`
	RefreshLatency LatencyMS        `json:"refresh_latency_ms"`
	CodeToRefresh  float64          `json:"code_to_refresh_percent"`
}

// WriteText prints r for a person.
func (r CodeReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "code         authorization_code exchanges vs refresh grants, %d workers, %.1fs each in %d alternating slices\n", r.Concurrency, r.DurationS, Slices)
	fmt.Fprintf(w, "exchanges/s  %.0f  (ok %d, errors %d)  p50 %.2f  p99 %.2f ms\n", r.CodesPerS, r.CodeOK, r.CodeErrors, r.CodeLatencyMS.P50, r.CodeLatencyMS.P99)
	if len(r.CodeFailures) > 0 {
		fmt.Fprintf(w, "failures     %v\n", r.CodeFailures)
	}
	fmt.Fprintf(w, "refreshes/s  %.0f  (ok %d, errors %d)  p50 %.2f  p99 %.2f ms\n", r.GrantsPerS, r.RefreshOK, r.RefreshErrors, r.RefreshLatency.P50, r.RefreshLatency.P99)
	fmt.Fprintf(w, "ratio        %.0f%%\n", r.CodeToRefresh)
	return nil
}

// Code is an authorization code ready to exchange and its PKCE verifier
// (RFC 7636; URL-safe by construction, sent as it is).
type Code struct{ Code, Verifier string }

// Exchanges is the outcome of [Endpoint.Exchange].
type Exchanges struct {
	OK, Errors int64
	Elapsed    time.Duration
	Latency    *Histogram
}

// Exchange exchanges codes (redirect_uri redirectURI) with workers
// workers until d has passed, ctx is done or the codes run out; every
// worker exchanges at least one code, however short d. Each failure is
// counted into failures by "status error" ("net" for a transport error).
func (e Endpoint) Exchange(ctx context.Context, codes []Code, redirectURI string, workers int, d time.Duration, failures map[string]int64) Exchanges {
	prefix := e.clientPrefix("authorization_code") + "&redirect_uri=" + url.QueryEscape(redirectURI)
	var next, ok, fails atomic.Int64
	var mu sync.Mutex
	hist := new(Histogram)
	reqCtx := context.WithoutCancel(ctx)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var h Histogram
			local := map[string]int64{}
			for first := true; first || (time.Now().Before(deadline) && ctx.Err() == nil); first = false {
				i := int(next.Add(1)) - 1
				if i >= len(codes) {
					break
				}
				t0 := time.Now()
				status, tr, err := e.Post(reqCtx, prefix+"&code="+url.QueryEscape(codes[i].Code)+"&code_verifier="+codes[i].Verifier)
				h.Add(time.Since(t0))
				if status == http.StatusOK && err == nil {
					ok.Add(1)
					continue
				}
				fails.Add(1)
				key := statusKey(status)
				if status != 0 {
					key += " " + tr.Error
				}
				local[key]++
			}
			mu.Lock()
			hist.Merge(&h)
			for k, v := range local {
				failures[k] += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return Exchanges{OK: ok.Load(), Errors: fails.Load(), Elapsed: time.Since(start), Latency: hist}
}

// CodeRun is what [Endpoint.CodeVsRefresh] needs besides the endpoint.
type CodeRun struct {
	Tokens      []string      // one refresh-token chain per token
	Workers     int           // code-exchanging workers
	Duration    time.Duration // per kind, split into Slices slices
	RedirectURI string        // of the minted codes
	// Mint stores n codes for the endpoint's client, untimed; the
	// exchange slice that follows uses them.
	Mint     func(ctx context.Context, n int) ([]Code, error)
	Progress io.Writer // a line per slice, or nil
}

// CodeVsRefresh measures authorization_code exchanges against refresh
// grants, in Slices alternating slices of run.Duration/Slices
// each: a refresh slice over run.Tokens, then an exchange slice over codes
// that run.Mint stores just before it (untimed), half again as many as
// the refresh slice before could have used, plus one per worker. A slice
// that runs out of codes ends early and its rate counts the time it ran.
// Every refresh chain must survive every slice.
func (e Endpoint) CodeVsRefresh(ctx context.Context, run CodeRun) (CodeReport, error) {
	slice := run.Duration / Slices
	tokens := run.Tokens
	var (
		codeHist, refreshHist Histogram
		codeOK, codeErr       int64
		refOK, refErr         int64
		codeTime, refTime     time.Duration
		failures              = map[string]int64{}
	)
	for i := range Slices {
		rep, live, h := e.Refresh(ctx, tokens, len(tokens), slice, Progress{})
		if len(live) < len(tokens) {
			return CodeReport{}, fmt.Errorf("refresh slice %d: %d of %d chains died (by status %v)", i+1, len(tokens)-len(live), len(tokens), rep.ByStatus)
		}
		tokens = live
		refOK, refErr, refTime = refOK+rep.OK, refErr+rep.Errors, refTime+time.Duration(rep.DurationS*float64(time.Second))
		refreshHist.Merge(h)

		want := int(math.Ceil(1.5*rep.GrantsPerS*slice.Seconds())) + run.Workers
		codes, err := run.Mint(ctx, want)
		if err != nil {
			return CodeReport{}, err
		}
		x := e.Exchange(ctx, codes, run.RedirectURI, run.Workers, slice, failures)
		codeOK, codeErr, codeTime = codeOK+x.OK, codeErr+x.Errors, codeTime+x.Elapsed
		codeHist.Merge(x.Latency)
		if run.Progress != nil {
			fmt.Fprintf(run.Progress, "bench: slice %d/%d  refresh %.0f/s  code %.0f/s, %d errors (%d of %d minted codes used)\n",
				i+1, Slices, rep.GrantsPerS, float64(x.OK)/x.Elapsed.Seconds(), x.Errors, x.OK+x.Errors, len(codes))
		}
	}
	rep := CodeReport{
		Mode: "code", Concurrency: run.Workers, DurationS: run.Duration.Seconds(),
		CodesPerS: float64(codeOK) / codeTime.Seconds(), CodeOK: codeOK, CodeErrors: codeErr,
		CodeLatencyMS: codeHist.Latency(), CodeFailures: failures,
		GrantsPerS: float64(refOK) / refTime.Seconds(), RefreshOK: refOK, RefreshErrors: refErr,
		RefreshLatency: refreshHist.Latency(),
	}
	if rep.GrantsPerS > 0 {
		rep.CodeToRefresh = 100 * rep.CodesPerS / rep.GrantsPerS
	}
	return rep, nil
}
