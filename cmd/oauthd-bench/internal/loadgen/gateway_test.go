package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestGateway drives three fake proxies in two reps. What it checks does
// not depend on speed: the order of the runs (each rep starts one target
// later), the warm-up (every one of gateway-N's tokens is sent once
// before the clock starts, so its one bad token is exactly one warm-up
// non-2xx), the profile and idle-connection hooks once per run, and the
// cache figures of the last gateway-N run.
func TestGateway(t *testing.T) {
	many := make([]string, 40)
	for i := range many {
		many[i] = "tok" + strconv.Itoa(i)
	}
	var (
		mu       sync.Mutex
		seen     = map[string]bool{}
		closed   []string
		profiled []string
		stopped  int
	)
	start := func(_ context.Context, target string) (Proxy, error) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			if r.URL.Path != GatewayPath {
				t.Errorf("path %q", r.URL.Path)
			}
			if target == TargetGatewayN {
				mu.Lock()
				seen[tok] = true
				mu.Unlock()
			}
			if target != TargetBare && tok == "tok7" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			io.WriteString(w, "{}")
		})
		px := Proxy{Handler: h, CloseIdle: func() {
			mu.Lock()
			closed = append(closed, target)
			mu.Unlock()
		}}
		if target == TargetGatewayN {
			px.Cache = func() CacheStats { return CacheStats{Entries: 39, Bytes: 4096, MaxEntries: 100, Hits: 3, Misses: 1} }
		}
		return px, nil
	}
	rep, err := Gateway(t.Context(), GatewayConfig{
		Workers: 2, Duration: 50 * time.Millisecond, Reps: 2,
		Targets: []string{TargetBare, TargetGatewayOne, TargetGatewayN},
		One:     "tok0", Many: many, Start: start,
		Profile: func(target string, rep int) (func(), error) {
			profiled = append(profiled, fmt.Sprintf("%s.%d", target, rep))
			return func() { stopped++ }, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range rep.Runs {
		order = append(order, fmt.Sprintf("%s.%d", r.Target, r.Rep))
		wantWarmBad := int64(0)
		if r.Target == TargetGatewayN {
			wantWarmBad = 1
		}
		if r.WarmupNon2xx != wantWarmBad || r.NetErrors != 0 || r.Requests <= 0 {
			t.Errorf("run %+v; want %d warm-up non-2xx, no net errors, requests", r, wantWarmBad)
		}
		if r.Target != TargetGatewayN && r.Non2xx != 0 {
			t.Errorf("run %s.%d: %d non-2xx; want none (one good token)", r.Target, r.Rep, r.Non2xx)
		}
	}
	wantOrder := []string{"bare.1", "gateway-1.1", "gateway-N.1", "gateway-1.2", "gateway-N.2", "bare.2"}
	if !slices.Equal(order, wantOrder) {
		t.Errorf("runs %v; want %v", order, wantOrder)
	}
	if !slices.Equal(profiled, wantOrder) || stopped != len(wantOrder) {
		t.Errorf("profiled %v, stopped %d; want each run once", profiled, stopped)
	}
	if !slices.Equal(closed, []string{"bare", "gateway-1", "gateway-N", "gateway-1", "gateway-N", "bare"}) {
		t.Errorf("idle connections closed after %v", closed)
	}
	if len(seen) != len(many) {
		t.Errorf("gateway-N saw %d distinct tokens; want all %d", len(seen), len(many))
	}
	if rep.DistinctTokens != 40 || rep.CacheEntries != 39 || rep.CacheBytes != 4096 || rep.CacheMax != 100 || rep.CacheHitPc != 75 {
		t.Errorf("report %+v; want the cache of the last gateway-N run", rep)
	}
	for _, k := range []string{"gateway-1/bare rps", "gateway-1/bare p99", "gateway-N/bare rps"} {
		if rep.Ratios[k] <= 0 {
			t.Errorf("ratio %q = %v; want > 0", k, rep.Ratios[k])
		}
	}
	if _, ok := rep.Ratios["gateway-1/bare-tuned rps"]; ok {
		t.Error("a ratio to bare-tuned, which did not run")
	}
}

// TestGatewayErrors: a proxy that cannot start, and a profile that
// cannot, end the run with the target named.
func TestGatewayErrors(t *testing.T) {
	ok := func(context.Context, string) (Proxy, error) {
		return Proxy{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}, nil
	}
	_, err := Gateway(t.Context(), GatewayConfig{Workers: 1, Duration: time.Millisecond, Reps: 1, Targets: []string{TargetBare}, One: "t",
		Start: func(context.Context, string) (Proxy, error) { return Proxy{}, errors.New("no JWKS") }})
	if err == nil || !strings.Contains(err.Error(), "no JWKS") {
		t.Errorf("start error: %v", err)
	}
	_, err = Gateway(t.Context(), GatewayConfig{Workers: 2, Duration: time.Hour, Reps: 1, Targets: []string{TargetBare}, One: "t", Start: ok,
		Profile: func(string, int) (func(), error) { return nil, errors.New("disk full") }})
	if err == nil || !strings.Contains(err.Error(), "bare: disk full") {
		t.Errorf("profile error: %v", err)
	}
}

func TestGatewayRatios(t *testing.T) {
	run := func(target string, rep int, rps, p99, cpu float64) GatewayRun {
		return GatewayRun{Target: target, Rep: rep, PerS: rps, LatencyMS: LatencyMS{P99: p99}, CPUPerReqUS: cpu}
	}
	runs := []GatewayRun{
		run(TargetBare, 1, 100, 2, 10), run(TargetGatewayOne, 1, 100, 1, 10),
		run(TargetBare, 2, 100, 4, 10), run(TargetGatewayOne, 2, 200, 1, 30),
		run(TargetBare, 3, 100, 1, 0), run(TargetGatewayOne, 3, 300, 1, 20), // no CPU figure for bare in rep 3
	}
	got := gatewayRatios(runs, 3)
	want := map[string]float64{
		"gateway-1/bare rps":     2,   // 1, 2, 3
		"gateway-1/bare p99":     0.5, // 0.5, 0.25, 1
		"gateway-1/bare cpu/req": 2,   // 1, 3
	}
	if len(got) != len(want) {
		t.Errorf("ratios %v; want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("ratio %q = %v; want %v", k, got[k], v)
		}
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"empty", nil, 0},
		{"one", []float64{7}, 7},
		{"odd", []float64{3, 1, 2}, 2},
		{"even", []float64{4, 1, 3, 2}, 2.5},
	}
	for _, tc := range tests {
		in := slices.Clone(tc.in)
		if got := Median(tc.in); got != tc.want {
			t.Errorf("%s: Median(%v) = %v; want %v", tc.name, in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("%s: Median changed its argument to %v", tc.name, tc.in)
		}
	}
}

func TestUpstream(t *testing.T) {
	u, stop, err := StartUpstream()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u.String() + GatewayPath)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || string(b) != string(upstreamBody) {
		t.Errorf("upstream: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	stop()
	if _, err := http.Get(u.String()); err == nil {
		t.Error("upstream still answers after stop")
	}
}
