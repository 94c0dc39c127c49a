package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"oauthd/data/memory"
	"oauthd/keys"
	"oauthd/keys/guard"
)

// benchGatewayPath is the route every request of --mode gateway calls: it
// needs PROFILE_READ.
const benchGatewayPath = "/v2/me"

// benchUpstreamBody is the tiny upstream's answer, shaped like /v2/me's.
var benchUpstreamBody = []byte(`{"status":"success","data":{"id":42,"email":"ann@example.com","username":"ann","name":"Ann Lee","timeZone":"Europe/Berlin"}}` + "\n")

// gatewayRun is one measured run of one target.
type gatewayRun struct {
	Target    string    `json:"target"`
	Rep       int       `json:"rep"`
	Requests  int64     `json:"requests"`
	PerS      float64   `json:"requests_per_s"`
	LatencyMS latencyMS `json:"latency_ms"`
	Non2xx    int64     `json:"non_2xx"`
	NetErrors int64     `json:"net_errors"`
	// CPUPerReqUS is this process's CPU time (user and system: proxy,
	// upstream and load generator together) per request of the measured
	// run, in microseconds: less sensitive to other tenants than req/s.
	CPUPerReqUS float64 `json:"cpu_us_per_request"`
	// The warm-up before the measured run: each worker sends each of its
	// tokens once (at least 20 requests), so for the many-tokens workload
	// it is the cold pass, a full verification per token.
	WarmupS      float64 `json:"warmup_s"`
	WarmupPerS   float64 `json:"warmup_requests_per_s"`
	WarmupNon2xx int64   `json:"warmup_non_2xx"`
}

// gatewayReport is the result of --mode gateway.
type gatewayReport struct {
	Mode           string       `json:"mode"`
	Concurrency    int          `json:"concurrency"`
	DurationS      float64      `json:"duration_s"` // per run
	Reps           int          `json:"reps"`
	DistinctTokens int          `json:"distinct_tokens"`
	Runs           []gatewayRun `json:"runs"`
	// Medians over the reps of each rep's ratio (gateway ÷ bare proxy in
	// that rep), for requests/s and for p99.
	Ratios map[string]float64 `json:"ratios"`
	// The gateway's token cache after its last many-tokens run.
	CacheEntries int     `json:"cache_entries"`
	CacheBytes   int     `json:"cache_bytes"`
	CacheMax     int     `json:"cache_max_entries"`
	CacheHitPc   float64 `json:"cache_hit_percent"`
}

// The targets of --mode gateway, in the order of each rep.
const (
	targetBare       = "bare"       // httputil.NewSingleHostReverseProxy, http.DefaultTransport
	targetBareTuned  = "bare-tuned" // the same with the gateway's transport and buffer pool
	targetGatewayOne = "gateway-1"  // the gateway, every request with the same token
	targetGatewayN   = "gateway-N"  // the gateway, each request with the next of N tokens
	// targetUncached is the gateway with its token cache off and one token
	// (not run unless --targets names it): what the cache is worth.
	targetUncached = "gateway-uncached"
)

// gatewayTargets are the targets of --mode gateway, in the first rep's order.
var gatewayTargets = []string{targetBare, targetBareTuned, targetGatewayOne, targetGatewayN}

// runGateway measures `oauthd gateway` against bare reverse proxies in
// front of the same upstream, all on loopback in this process, in
// alternating reps; each run gets fresh proxies (an empty token cache).
func (o *benchOptions) runGateway(ctx context.Context, stdout, stderr io.Writer) error {
	logger := slog.New(slog.DiscardHandler)

	// The issuer: a key manager as serve has it, its JWKS on loopback.
	km, err := keys.New(ctx, keys.Config{Store: memory.New()})
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	issLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	issURL := "http://" + issLn.Addr().String()
	issSrv := &http.Server{Handler: km, ReadHeaderTimeout: 5 * time.Second}
	go issSrv.Serve(issLn)
	defer issSrv.Close()

	// The upstream.
	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	upURL, _ := url.Parse("http://" + upLn.Addr().String())
	upSrv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(benchUpstreamBody)
	})}
	go upSrv.Serve(upLn)
	defer upSrv.Close()

	// The tokens: access tokens as the issuer mints them, signed by its
	// active key.
	now := time.Now()
	mint := func(i int) (string, error) {
		claims, err := keys.JSONClaims(jwt.MapClaims{
			"iss": issURL, "aud": issURL, "sub": strconv.Itoa(1 + i%1000), "client_id": "oauthd_bench_client_" + strconv.Itoa(i%100),
			"scope": "PROFILE_READ BOOKING_READ", "iat": now.Unix(), "exp": now.Add(keys.DefaultTokenTTL).Unix(),
			"jti": "bench-" + strconv.Itoa(i),
		})
		if err != nil {
			return "", err
		}
		return km.Sign(claims)
	}
	one, err := mint(o.distinct)
	if err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	many := make([]string, o.distinct)
	for i := range many {
		if many[i], err = mint(i); err != nil {
			return fmt.Errorf("sign: %w", err)
		}
	}

	gwCfg := &gatewayConfig{upstream: upURL, issuer: issURL, jwksURL: issURL + "/.well-known/jwks.json", audience: issURL,
		table: guard.DefaultTable(), cache: 0}
	var lastGW *gateway
	// start returns a fresh proxy of target and what closes its idle
	// upstream connections after its run.
	start := func(target string) (http.Handler, func(), error) {
		switch target {
		case targetBare:
			return httputil.NewSingleHostReverseProxy(upURL), http.DefaultTransport.(*http.Transport).CloseIdleConnections, nil
		case targetBareTuned:
			t := guard.NewTransport()
			return &httputil.ReverseProxy{
				Rewrite: func(pr *httputil.ProxyRequest) {
					pr.SetURL(upURL)
					pr.SetXForwarded()
				},
				Transport: t, BufferPool: guard.NewBufferPool(),
			}, t.CloseIdleConnections, nil
		}
		cfg := *gwCfg
		if target == targetUncached {
			cfg.cache = -1
		}
		gw, err := cfg.build(logger, nil)
		if err != nil {
			return nil, nil, err
		}
		if err := gw.keys.Refresh(ctx); err != nil {
			return nil, nil, fmt.Errorf("gateway: fetch the JWKS: %w", err)
		}
		lastGW = gw
		return gw.handler, gw.proxy.CloseIdleConnections, nil
	}

	rep := gatewayReport{Mode: "gateway", Concurrency: o.concurrency, DurationS: o.duration.Seconds(), Reps: o.reps, DistinctTokens: o.distinct}
	targets := gatewayTargets
	if len(o.targets) > 0 {
		targets = o.targets
	}
	for r := 1; r <= o.reps; r++ {
		// Each rep starts one target later than the one before, so that no
		// target always runs right after the same other one.
		for i := range targets {
			target := targets[(i+r-1)%len(targets)]
			if err := ctx.Err(); err != nil {
				return err
			}
			h, closeIdle, err := start(target)
			if err != nil {
				return err
			}
			toks := []string{one}
			if target == targetGatewayN {
				toks = many
			}
			prof := ""
			if o.cpuProfile != "" {
				prof = fmt.Sprintf("%s.%s.%d", o.cpuProfile, target, r)
			}
			run, err := o.driveGateway(ctx, h, toks, prof)
			closeIdle()
			if err != nil {
				return fmt.Errorf("%s: %w", target, err)
			}
			run.Target, run.Rep = target, r
			rep.Runs = append(rep.Runs, run)
			fmt.Fprintf(stderr, "bench: rep %d/%d %-10s %8.0f req/s  p50 %.2f ms  p99 %.2f ms  non-2xx %d  net errors %d\n",
				r, o.reps, target, run.PerS, run.LatencyMS.P50, run.LatencyMS.P99, run.Non2xx, run.NetErrors)
			if target == targetGatewayN && lastGW != nil && lastGW.verify.CacheStats().MaxEntries > 0 {
				st := lastGW.verify.CacheStats()
				rep.CacheEntries, rep.CacheBytes, rep.CacheMax = st.Entries, st.Bytes, st.MaxEntries
				if st.Hits+st.Misses > 0 {
					rep.CacheHitPc = 100 * float64(st.Hits) / float64(st.Hits+st.Misses)
				}
			}
		}
	}
	rep.Ratios = gatewayRatios(rep.Runs, o.reps)
	return rep.print(stdout, o.json)
}

// gatewayRatios are the medians over the reps of each rep's ratios.
func gatewayRatios(runs []gatewayRun, reps int) map[string]float64 {
	by := map[string]map[int]gatewayRun{}
	for _, r := range runs {
		if by[r.Target] == nil {
			by[r.Target] = map[int]gatewayRun{}
		}
		by[r.Target][r.Rep] = r
	}
	out := map[string]float64{}
	for _, gw := range []string{targetGatewayOne, targetGatewayN, targetUncached} {
		for _, bare := range []string{targetBare, targetBareTuned} {
			var rps, p99, cpu []float64
			for i := 1; i <= reps; i++ {
				g, b := by[gw][i], by[bare][i]
				if g.PerS > 0 && b.PerS > 0 && b.LatencyMS.P99 > 0 {
					rps = append(rps, g.PerS/b.PerS)
					p99 = append(p99, g.LatencyMS.P99/b.LatencyMS.P99)
				}
				if g.CPUPerReqUS > 0 && b.CPUPerReqUS > 0 {
					cpu = append(cpu, g.CPUPerReqUS/b.CPUPerReqUS)
				}
			}
			if len(rps) > 0 {
				out[gw+"/"+bare+" rps"] = median(rps)
				out[gw+"/"+bare+" p99"] = median(p99)
			}
			if len(cpu) > 0 {
				out[gw+"/"+bare+" cpu/req"] = median(cpu)
			}
		}
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

func (r gatewayReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return printJSON(w, r)
	}
	fmt.Fprintf(w, "gateway      GET %s through each proxy to one tiny upstream, c=%d, %s per run, %d reps (alternating), %d distinct tokens for %s\n",
		benchGatewayPath, r.Concurrency, time.Duration(r.DurationS*float64(time.Second)), r.Reps, r.DistinctTokens, targetGatewayN)
	fmt.Fprintf(w, "%-16s %4s %9s %8s %8s %10s %8s %7s %14s\n", "target", "rep", "req/s", "p50 ms", "p99 ms", "cpu µs/req", "non-2xx", "errors", "warm-up req/s")
	for _, run := range r.Runs {
		fmt.Fprintf(w, "%-16s %4d %9.0f %8.2f %8.2f %10.1f %8d %7d %14.0f\n", run.Target, run.Rep, run.PerS, run.LatencyMS.P50, run.LatencyMS.P99,
			run.CPUPerReqUS, run.Non2xx+run.WarmupNon2xx, run.NetErrors, run.WarmupPerS)
	}
	keys := make([]string, 0, len(r.Ratios))
	for k := range r.Ratios {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	fmt.Fprintln(w, "median of the reps' ratios (gateway ÷ bare in the same rep):")
	for _, k := range keys {
		fmt.Fprintf(w, "  %-38s %.3f\n", k, r.Ratios[k])
	}
	if r.CacheMax > 0 {
		fmt.Fprintf(w, "token cache  %d of %d entries, %.1f MiB accounted, %.1f%% hits (last %s run, warm-up included)\n",
			r.CacheEntries, r.CacheMax, float64(r.CacheBytes)/(1<<20), r.CacheHitPc, targetGatewayN)
	}
	return nil
}

// driveGateway serves h on a fresh loopback listener and drives it for
// o.duration with o.concurrency keep-alive connections, each sending GET
// benchGatewayPath with the next of toks (worker i starts at token i).
// The client writes prepared request bytes on raw connections, like wrk,
// so that the load generator costs as little CPU as it can.
func (o *benchOptions) driveGateway(ctx context.Context, h http.Handler, toks []string, profile string) (gatewayRun, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return gatewayRun{}, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)}
	go srv.Serve(ln)
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	addr := ln.Addr().String()
	reqs := make([][]byte, len(toks))
	for i, t := range toks {
		reqs[i] = []byte("GET " + benchGatewayPath + " HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + t +
			"\r\nUser-Agent: oauthd-bench\r\nAccept: */*\r\n\r\n")
	}
	runtime.GC() // the previous run's garbage is not this one's
	var (
		total, non2xx, netErrs atomic.Int64
		warmNon2xx             atomic.Int64
		mu                     sync.Mutex
		hist                   = new(histogram)
		wg, warm               sync.WaitGroup
		measure                = make(chan struct{})
		startAt, deadline      time.Time
	)
	// The warm-up: every worker sends each of its tokens once (at least
	// warmMin requests), so that every connection is open and every
	// token has been seen once before the clock starts.
	const warmMin = 20
	warmN := max(warmMin, (len(reqs)+o.concurrency-1)/o.concurrency)
	warmStart := time.Now()
	warm.Add(o.concurrency)
	for w := range o.concurrency {
		wg.Go(func() {
			var hl histogram
			var conn net.Conn
			var br *bufio.Reader
			defer func() {
				if conn != nil {
					conn.Close()
				}
			}()
			next := w % len(reqs)
			// one sends the next request; false when the run must stop.
			one := func(measured bool) bool {
				if ctx.Err() != nil {
					return false
				}
				if conn == nil {
					c, err := net.DialTimeout("tcp", addr, 5*time.Second)
					if err != nil {
						netErrs.Add(1)
						time.Sleep(10 * time.Millisecond)
						return true
					}
					conn, br = c, bufio.NewReaderSize(c, 16<<10)
				}
				t0 := time.Now()
				conn.SetDeadline(t0.Add(benchRequestTimeout))
				status, keep, err := roundTrip(conn, br, reqs[next])
				if err != nil {
					netErrs.Add(1)
					conn.Close()
					conn = nil
					return true
				}
				if !keep {
					conn.Close()
					conn = nil
				}
				bad := status < 200 || status > 299
				if measured {
					hl.add(time.Since(t0))
					total.Add(1)
					if bad {
						non2xx.Add(1)
					}
				} else if bad {
					warmNon2xx.Add(1)
				}
				if next += o.concurrency; next >= len(reqs) {
					next = w % o.concurrency % len(reqs)
				}
				return true
			}
			for range warmN {
				if !one(false) {
					break
				}
			}
			warm.Done()
			<-measure
			for time.Now().Before(deadline) && one(true) {
			}
			mu.Lock()
			hist.merge(&hl)
			mu.Unlock()
		})
	}
	warm.Wait()
	warmElapsed := time.Since(warmStart)
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return gatewayRun{}, fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return gatewayRun{}, fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	cpu0 := processCPU()
	startAt = time.Now()
	deadline = startAt.Add(o.duration)
	close(measure)
	wg.Wait()
	elapsed := time.Since(startAt)
	cpu := processCPU() - cpu0
	if profile != "" {
		pprof.StopCPUProfile()
	}
	if total.Load() == 0 {
		return gatewayRun{}, errors.New("no request completed")
	}
	return gatewayRun{Requests: total.Load(), PerS: float64(total.Load()) / elapsed.Seconds(), LatencyMS: hist.latency(),
		Non2xx: non2xx.Load(), NetErrors: netErrs.Load(), CPUPerReqUS: float64(cpu.Microseconds()) / float64(total.Load()), WarmupS: warmElapsed.Seconds(),
		WarmupPerS: float64(warmN*o.concurrency) / warmElapsed.Seconds(), WarmupNon2xx: warmNon2xx.Load()}, nil
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// roundTrip writes req on conn and reads the response: its status, and
// whether the connection stays open.
func roundTrip(conn net.Conn, br *bufio.Reader, req []byte) (status int, keep bool, err error) {
	if _, err := conn.Write(req); err != nil {
		return 0, false, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, false, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, false, err
	}
	return resp.StatusCode, !resp.Close, nil
}
