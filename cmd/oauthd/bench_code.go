package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"

	"oauthd/data"
)

// benchCodeSlices is how many alternating slices of code exchanges and
// refresh grants --mode code runs, so that a change in the machine's load
// hits both alike.
const benchCodeSlices = 4

// codeReport is the result of --mode code: authorization_code exchanges
// against refresh grants on the same server, in alternating slices.
type codeReport struct {
	Mode           string           `json:"mode"`
	Concurrency    int              `json:"concurrency"`
	DurationS      float64          `json:"duration_s"` // per kind, in benchCodeSlices slices each
	CodesPerS      float64          `json:"code_exchanges_per_s"`
	CodeOK         int64            `json:"code_ok"`
	CodeErrors     int64            `json:"code_errors"`
	CodeLatencyMS  latencyMS        `json:"code_latency_ms"`
	CodeFailures   map[string]int64 `json:"code_failures"` // by "status error", "net" for transport errors
	GrantsPerS     float64          `json:"refresh_grants_per_s"`
	RefreshOK      int64            `json:"refresh_ok"`
	RefreshErrors  int64            `json:"refresh_errors"`
	RefreshLatency latencyMS        `json:"refresh_latency_ms"`
	CodeToRefresh  float64          `json:"code_to_refresh_percent"`
}

func (r codeReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return printJSON(w, r)
	}
	fmt.Fprintf(w, "code         authorization_code exchanges vs refresh grants, %d workers, %.1fs each in %d alternating slices\n", r.Concurrency, r.DurationS, benchCodeSlices)
	fmt.Fprintf(w, "exchanges/s  %.0f  (ok %d, errors %d)  p50 %.2f  p99 %.2f ms\n", r.CodesPerS, r.CodeOK, r.CodeErrors, r.CodeLatencyMS.P50, r.CodeLatencyMS.P99)
	if len(r.CodeFailures) > 0 {
		fmt.Fprintf(w, "failures     %v\n", r.CodeFailures)
	}
	fmt.Fprintf(w, "refreshes/s  %.0f  (ok %d, errors %d)  p50 %.2f  p99 %.2f ms\n", r.GrantsPerS, r.RefreshOK, r.RefreshErrors, r.RefreshLatency.P50, r.RefreshLatency.P99)
	fmt.Fprintf(w, "ratio        %.0f%%\n", r.CodeToRefresh)
	return nil
}

// pendingCode is a code minted for --mode code and its PKCE verifier.
type pendingCode struct{ code, verifier string }

// runCode measures authorization_code exchanges over loopback HTTP against
// refresh grants, in alternating slices of o.duration/benchCodeSlices. The
// codes of each exchange slice are stored just before it (mintCodes,
// untimed), half again as many as the refresh slice before it could have
// used; a slice that runs out of codes ends early and its rate counts the
// time it ran.
func (o *benchOptions) runCode(ctx context.Context, s *benchServer, sd seeded, progress io.Writer) (codeReport, error) {
	slice := o.duration / benchCodeSlices
	tokenURL := s.w.listenURL + benchTokenPath
	tokens := sd.tokens
	var (
		codeHist, refreshHist histogram
		codeOK, codeErr       int64
		refOK, refErr         int64
		codeTime, refTime     time.Duration
		failures              = map[string]int64{}
	)
	for i := range benchCodeSlices {
		rep, live, h := driveChains(ctx, s.hc, tokenURL, sd.clientID, sd.clientSecret, tokens, slice, 0, nil)
		if len(live) < len(tokens) {
			return codeReport{}, fmt.Errorf("refresh slice %d: %d of %d chains died (by status %v)", i+1, len(tokens)-len(live), len(tokens), rep.ByStatus)
		}
		tokens = live
		refOK, refErr, refTime = refOK+rep.OK, refErr+rep.Errors, refTime+time.Duration(rep.DurationS*float64(time.Second))
		refreshHist.merge(h)

		want := int(math.Ceil(1.5*rep.GrantsPerS*slice.Seconds())) + o.concurrency
		codes, err := mintCodes(ctx, s, sd, want)
		if err != nil {
			return codeReport{}, err
		}
		ok, errs, d, h := driveCodes(ctx, s.hc, tokenURL, sd.clientID, sd.clientSecret, codes, o.concurrency, slice, failures)
		codeOK, codeErr, codeTime = codeOK+ok, codeErr+errs, codeTime+d
		codeHist.merge(h)
		if progress != nil {
			fmt.Fprintf(progress, "bench: slice %d/%d  refresh %.0f/s  code %.0f/s, %d errors (%d of %d minted codes used)\n",
				i+1, benchCodeSlices, rep.GrantsPerS, float64(ok)/d.Seconds(), errs, ok+errs, len(codes))
		}
	}
	rep := codeReport{
		Mode: "code", Concurrency: o.concurrency, DurationS: o.duration.Seconds(),
		CodesPerS: float64(codeOK) / codeTime.Seconds(), CodeOK: codeOK, CodeErrors: codeErr,
		CodeLatencyMS: codeHist.latency(), CodeFailures: failures,
		GrantsPerS: float64(refOK) / refTime.Seconds(), RefreshOK: refOK, RefreshErrors: refErr,
		RefreshLatency: refreshHist.latency(),
	}
	if rep.GrantsPerS > 0 {
		rep.CodeToRefresh = 100 * rep.CodesPerS / rep.GrantsPerS
	}
	return rep, nil
}

// mintCodes stores n authorization codes for the seeded client and user,
// as issuer Approve builds them (PKCE S256, the bench redirect URI and
// scopes, expiring after a minute), 64 writes at a time so that they share
// fsyncs. Approve itself also rewrites the user's consent record, one
// bbolt transaction each, which would make minting a slice's codes take
// longer than the codes live.
func mintCodes(ctx context.Context, s *benchServer, sd seeded, n int) ([]pendingCode, error) {
	out := make([]pendingCode, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				code, verifier := data.NewAuthCode(time.Now()), oauth2.GenerateVerifier()
				now := time.Now().UTC()
				err := s.w.store.CreateAuthCode(ctx, data.AuthCode{
					Hash: data.AuthCodeKey(code), ClientID: sd.clientID, UserID: sd.userID, RedirectURI: benchRedirectURI,
					Scopes: []string{"PROFILE_READ", "BOOKING_READ"}, CodeChallenge: oauth2.S256ChallengeFromVerifier(verifier),
					CreatedAt: now, ExpiresAt: now.Add(time.Minute),
				})
				if err != nil {
					errs <- fmt.Errorf("mint code %d: %w", i, err)
					return
				}
				out[i] = pendingCode{code, verifier}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	return out, ctx.Err()
}

// driveCodes exchanges codes over loopback HTTP with conc workers until d
// has passed or the codes run out, and returns the successes, the
// failures (counted into byStatus by status and error code, "net" for a
// transport error), the time taken and the latencies.
func driveCodes(ctx context.Context, hc *http.Client, tokenURL, clientID, secret string, codes []pendingCode, conc int, d time.Duration, byStatus map[string]int64) (int64, int64, time.Duration, *histogram) {
	prefix := "grant_type=authorization_code&client_id=" + url.QueryEscape(clientID) + "&client_secret=" + url.QueryEscape(secret) +
		"&redirect_uri=" + url.QueryEscape(benchRedirectURI)
	var next, ok, fails atomic.Int64
	var mu sync.Mutex
	hist := new(histogram)
	reqCtx := context.WithoutCancel(ctx)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			var h histogram
			local := map[string]int64{}
			// Every worker exchanges at least one code, however short d.
			for first := true; first || (time.Now().Before(deadline) && ctx.Err() == nil); first = false {
				i := int(next.Add(1)) - 1
				if i >= len(codes) {
					break
				}
				t0 := time.Now()
				status, tr, err := postToken(reqCtx, hc, tokenURL, prefix+"&code="+url.QueryEscape(codes[i].code)+"&code_verifier="+codes[i].verifier)
				h.add(time.Since(t0))
				if status == http.StatusOK && err == nil {
					ok.Add(1)
					continue
				}
				fails.Add(1)
				key := strconv.Itoa(status) + " " + tr.Error
				if status == 0 {
					key = "net"
				}
				local[key]++
			}
			mu.Lock()
			hist.merge(&h)
			for k, v := range local {
				byStatus[k] += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return ok.Load(), fails.Load(), time.Since(start), hist
}
