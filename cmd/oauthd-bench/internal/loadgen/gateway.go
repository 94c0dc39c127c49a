package loadgen

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// GatewayPath is the route every request of [Gateway] calls (it needs
// PROFILE_READ).
const GatewayPath = "/v2/me"

// upstreamBody is the tiny upstream's answer, shaped like /v2/me's.
var upstreamBody = []byte(`{"status":"success","data":{"id":42,"email":"ann@example.com","username":"ann","name":"Ann Lee","timeZone":"Europe/Berlin"}}` + "\n")

// The targets of [Gateway], in the order of each rep.
const (
	TargetBare       = "bare"       // httputil.NewSingleHostReverseProxy, http.DefaultTransport
	TargetBareTuned  = "bare-tuned" // the same with the gateway's transport and buffer pool
	TargetGatewayOne = "gateway-1"  // the gateway, every request with the same token
	TargetGatewayN   = "gateway-N"  // the gateway, each request with the next of N tokens
	// TargetUncached is the gateway with its token cache off and one token
	// (not run unless named): what the cache is worth.
	TargetUncached = "gateway-uncached"
)

// GatewayTargets are the targets [Gateway] runs by default, in the first
// rep's order.
var GatewayTargets = []string{TargetBare, TargetBareTuned, TargetGatewayOne, TargetGatewayN}

// IsGatewayTarget reports whether t names a target.
func IsGatewayTarget(t string) bool { return slices.Contains(GatewayTargets, t) || t == TargetUncached }

// GatewayRun is one measured run of one target.
type GatewayRun struct {
	Target    string    `json:"target"`
	Rep       int       `json:"rep"`
	Requests  int64     `json:"requests"`
	PerS      float64   `json:"requests_per_s"`
	LatencyMS LatencyMS `json:"latency_ms"`
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

// GatewayReport is the result of [Gateway] (`oauthd-bench --mode gateway
// --json`).
type GatewayReport struct {
	Mode           string       `json:"mode"`
	Concurrency    int          `json:"concurrency"`
	DurationS      float64      `json:"duration_s"` // per run
	Reps           int          `json:"reps"`
	DistinctTokens int          `json:"distinct_tokens"`
	Runs           []GatewayRun `json:"runs"`
	// Medians over the reps of each rep's ratio (gateway ÷ bare proxy in
	// that rep), for requests/s, p99 and CPU per request.
	Ratios map[string]float64 `json:"ratios"`
	// The gateway's token cache after its last many-tokens run.
	CacheEntries int     `json:"cache_entries"`
	CacheBytes   int     `json:"cache_bytes"`
	CacheMax     int     `json:"cache_max_entries"`
	CacheHitPc   float64 `json:"cache_hit_percent"`
}

// Proxy is a fresh proxy of one target for one run.
type Proxy struct {
	Handler   http.Handler
	CloseIdle func() // closes its idle upstream connections after the run
	// Cache reads its token cache, or is nil (no cache).
	Cache func() CacheStats
}

// CacheStats is what [GatewayReport] says of a token cache.
type CacheStats struct {
	Entries, Bytes, MaxEntries int
	Hits, Misses               uint64
}

// GatewayConfig is what [Gateway] needs.
type GatewayConfig struct {
	Workers  int           // keep-alive connections
	Duration time.Duration // measured, per run
	Reps     int
	Targets  []string // default GatewayTargets
	One      string   // the token of every target but gateway-N
	Many     []string // gateway-N's tokens, sent in turn
	// Start returns a fresh proxy of target (an empty token cache).
	Start func(ctx context.Context, target string) (Proxy, error)
	// Profile, if set, starts a CPU profile of the measured part of a run
	// (after its warm-up) and returns what stops it.
	Profile  func(target string, rep int) (stop func(), err error)
	Progress io.Writer // a line per run, or nil
}

// StartUpstream serves the tiny upstream every proxy of [Gateway] sits in
// front of, on a loopback port, until stop is called.
func StartUpstream() (u *url.URL, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(upstreamBody)
	})}
	go srv.Serve(ln)
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}, func() { srv.Close() }, nil
}

// Gateway measures proxies in front of the same upstream, all on loopback
// in this process, in cfg.Reps alternating reps (each rep starts one
// target later than the one before, so that no target always runs right
// after the same other one); each run gets a fresh proxy from cfg.Start.
func Gateway(ctx context.Context, cfg GatewayConfig) (GatewayReport, error) {
	rep := GatewayReport{Mode: "gateway", Concurrency: cfg.Workers, DurationS: cfg.Duration.Seconds(), Reps: cfg.Reps, DistinctTokens: len(cfg.Many)}
	targets := GatewayTargets
	if len(cfg.Targets) > 0 {
		targets = cfg.Targets
	}
	for r := 1; r <= cfg.Reps; r++ {
		for i := range targets {
			target := targets[(i+r-1)%len(targets)]
			if err := ctx.Err(); err != nil {
				return GatewayReport{}, err
			}
			px, err := cfg.Start(ctx, target)
			if err != nil {
				return GatewayReport{}, err
			}
			toks := []string{cfg.One}
			if target == TargetGatewayN {
				toks = cfg.Many
			}
			var profile func() (func(), error)
			if cfg.Profile != nil {
				profile = func() (func(), error) { return cfg.Profile(target, r) }
			}
			run, err := driveProxy(ctx, px.Handler, toks, cfg.Workers, cfg.Duration, profile)
			if px.CloseIdle != nil {
				px.CloseIdle()
			}
			if err != nil {
				return GatewayReport{}, fmt.Errorf("%s: %w", target, err)
			}
			run.Target, run.Rep = target, r
			rep.Runs = append(rep.Runs, run)
			if cfg.Progress != nil {
				fmt.Fprintf(cfg.Progress, "bench: rep %d/%d %-10s %8.0f req/s  p50 %.2f ms  p99 %.2f ms  non-2xx %d  net errors %d\n",
					r, cfg.Reps, target, run.PerS, run.LatencyMS.P50, run.LatencyMS.P99, run.Non2xx, run.NetErrors)
			}
			if target == TargetGatewayN && px.Cache != nil {
				if st := px.Cache(); st.MaxEntries > 0 {
					rep.CacheEntries, rep.CacheBytes, rep.CacheMax = st.Entries, st.Bytes, st.MaxEntries
					if st.Hits+st.Misses > 0 {
						rep.CacheHitPc = 100 * float64(st.Hits) / float64(st.Hits+st.Misses)
					}
				}
			}
		}
	}
	rep.Ratios = gatewayRatios(rep.Runs, cfg.Reps)
	return rep, nil
}

// gatewayRatios are the medians over the reps of each rep's ratios of a
// gateway target to a bare one.
func gatewayRatios(runs []GatewayRun, reps int) map[string]float64 {
	by := map[string]map[int]GatewayRun{}
	for _, r := range runs {
		if by[r.Target] == nil {
			by[r.Target] = map[int]GatewayRun{}
		}
		by[r.Target][r.Rep] = r
	}
	out := map[string]float64{}
	for _, gw := range []string{TargetGatewayOne, TargetGatewayN, TargetUncached} {
		for _, bare := range []string{TargetBare, TargetBareTuned} {
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
				out[gw+"/"+bare+" rps"] = Median(rps)
				out[gw+"/"+bare+" p99"] = Median(p99)
			}
			if len(cpu) > 0 {
				out[gw+"/"+bare+" cpu/req"] = Median(cpu)
			}
		}
	}
	return out
}

// Median is the median of xs (0 when empty); xs is not changed.
func Median(xs []float64) float64 {
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

// WriteText prints r for a person.
func (r GatewayReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "gateway      GET %s through each proxy to one tiny upstream, c=%d, %s per run, %d reps (alternating), %d distinct tokens for %s\n",
		GatewayPath, r.Concurrency, time.Duration(r.DurationS*float64(time.Second)), r.Reps, r.DistinctTokens, TargetGatewayN)
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
			r.CacheEntries, r.CacheMax, float64(r.CacheBytes)/(1<<20), r.CacheHitPc, TargetGatewayN)
	}
	return nil
}
