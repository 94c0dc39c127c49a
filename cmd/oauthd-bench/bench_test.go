package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"oauthd/cmd/oauthd-bench/internal/loadgen"
)

// bench runs oauthd-bench in-process (through run) with --db db.
type bench struct {
	t  *testing.T
	db string
}

// newBench is a bench on a database path that does not exist yet.
func newBench(t *testing.T) *bench {
	t.Setenv("OAUTHD_MASTER_KEY", "")
	return &bench{t: t, db: filepath.Join(t.TempDir(), "o.db")}
}

// run returns stdout, stderr and the error.
func (c *bench) run(args ...string) (string, string, error) {
	c.t.Helper()
	var out, errb bytes.Buffer
	err := run(c.t.Context(), append([]string{"--db", c.db}, args...), &out, &errb)
	return out.String(), errb.String(), err
}

// ok runs oauthd-bench, which must succeed, and returns its stdout.
func (c *bench) ok(args ...string) string {
	c.t.Helper()
	out, errOut, err := c.run(args...)
	if err != nil {
		c.t.Fatalf("oauthd-bench %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// fails runs oauthd-bench, which must fail with stderr containing want.
func (c *bench) fails(want string, args ...string) {
	c.t.Helper()
	out, errOut, err := c.run(args...)
	if err == nil {
		c.t.Fatalf("oauthd-bench %s succeeded (stdout %q); want an error", strings.Join(args, " "), out)
	}
	if !strings.Contains(errOut, want) || !strings.HasPrefix(errOut, "oauthd-bench: ") {
		c.t.Errorf("oauthd-bench %s: stderr %q; want an \"oauthd-bench: \" line containing %q", strings.Join(args, " "), errOut, want)
	}
}

// oneJSON decodes out, which must hold exactly one JSON value, into v.
func oneJSON(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout %q is not JSON: %v", out, err)
	}
	if err := dec.Decode(new(json.RawMessage)); !errors.Is(err, io.EOF) {
		t.Fatalf("stdout %q holds more than one JSON value", out)
	}
}

// The bench tests run for a few hundred milliseconds and assert what does
// not depend on speed: every request succeeded, every chain is alive, the
// output is one JSON value. Each worker sends at least one request and
// each verify goroutine verifies at least 64 times, whatever the clock.

func TestBenchInProcess(t *testing.T) {
	c := newBench(t) // bench must not need, nor create, --db
	var rep loadgen.RefreshReport
	oneJSON(t, c.ok("--concurrency", "3", "--duration", "200ms", "--json"), &rep)
	if rep.Mode != "refresh" || rep.Chains != 3 || rep.ChainsAlive != 3 {
		t.Errorf("mode %q, chains %d alive %d; want refresh, 3 alive of 3", rep.Mode, rep.Chains, rep.ChainsAlive)
	}
	if rep.OK < 3 || rep.Errors != 0 || rep.Requests != rep.OK || rep.ByStatus["200"] != rep.OK {
		t.Errorf("ok %d, errors %d, requests %d, by status %v; want every request 200", rep.OK, rep.Errors, rep.Requests, rep.ByStatus)
	}
	if rep.LatencyMS.P50 <= 0 || rep.LatencyMS.P50 > rep.LatencyMS.P99 || rep.LatencyMS.P99 > rep.LatencyMS.Max {
		t.Errorf("latency %+v not ordered", rep.LatencyMS)
	}
	if _, err := os.Stat(c.db); err == nil {
		t.Errorf("bench created --db %s; it must use a temporary database", c.db)
	}
}

// TestBenchManyChains: more chains than one (user, client) pair may
// approve at once (issuer's approval budget, 60) are seeded at full speed,
// spread over users (grantsPerUser), and every chain refreshes.
func TestBenchManyChains(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 2×grantsPerUser+5 grants through the code flow (about a second); runs without -short")
	}
	c := newBench(t)
	n := 2*grantsPerUser + 5
	var rep loadgen.RefreshReport
	oneJSON(t, c.ok("--concurrency", strconv.Itoa(n), "--duration", "300ms", "--json"), &rep)
	if rep.Chains != n || rep.ChainsAlive != n || rep.Errors != 0 {
		t.Errorf("chains %d alive %d errors %d; want %d alive and no error", rep.Chains, rep.ChainsAlive, rep.Errors, n)
	}
}

func TestBenchTextAndProgress(t *testing.T) {
	c := newBench(t)
	out, _, err := c.run("-c", "2", "-d", "50ms")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"grants/s", "p50", "p99", "by status", "chains alive 2 of 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchVerify(t *testing.T) {
	c := newBench(t)
	var rep loadgen.VerifyReport
	oneJSON(t, c.ok("--mode", "verify", "-c", "2", "-d", "50ms", "--json"), &rep)
	if rep.Alg != "ES256" || rep.MiddlewareErrors != 0 || rep.RawErrors != 0 {
		t.Errorf("report %+v; want ES256 and no errors", rep)
	}
	if rep.MiddlewarePerS <= 0 || rep.RawPerS <= 0 || rep.MiddlewareToRawPc <= 0 {
		t.Errorf("report %+v; want positive rates", rep)
	}
}

// TestBenchGateway runs --mode gateway briefly: every target answers 2xx,
// the many-tokens gateway verified (and cached) every distinct token, and
// the ratios are the medians of the reps' ratios.
func TestBenchGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 12 proxy runs and two more take about 3 s")
	}
	c := newBench(t)
	var rep loadgen.GatewayReport
	oneJSON(t, c.ok("--mode", "gateway", "-c", "4", "-d", "200ms", "--reps", "3", "--distinct-tokens", "40", "--json"), &rep)
	if rep.Mode != "gateway" || rep.Reps != 3 || len(rep.Runs) != 3*4 {
		t.Fatalf("report %+v; want 3 reps of 4 targets", rep)
	}
	perS := map[string][]float64{}
	for _, r := range rep.Runs {
		if r.Requests <= 0 || r.Non2xx != 0 || r.WarmupNon2xx != 0 || r.NetErrors != 0 || r.LatencyMS.P99 <= 0 {
			t.Errorf("run %+v; want requests, all 2xx, no errors", r)
		}
		perS[r.Target] = append(perS[r.Target], r.PerS)
	}
	if rep.CacheEntries != 40 || rep.CacheHitPc <= 0 {
		t.Errorf("token cache %d entries, %.1f%% hits; want the 40 distinct tokens cached and hits", rep.CacheEntries, rep.CacheHitPc)
	}
	var ratios []float64
	for i := range 3 {
		ratios = append(ratios, perS[loadgen.TargetGatewayOne][i]/perS[loadgen.TargetBare][i])
	}
	if got, want := rep.Ratios["gateway-1/bare rps"], loadgen.Median(ratios); got != want {
		t.Errorf("gateway-1/bare rps = %v; want the median of %v", got, ratios)
	}
	prof := filepath.Join(t.TempDir(), "cpu")
	out, _, err := c.run("--mode", "gateway", "-c", "2", "-d", "100ms", "--reps", "1", "--distinct-tokens", "10",
		"--targets", "bare-tuned,gateway-N", "--cpuprofile", prof)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bare-tuned", "gateway-N/bare-tuned rps", "token cache  10 of"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "gateway-1") || strings.Contains(out, "gateway-N/bare rps") {
		t.Errorf("output has a target that was not asked for:\n%s", out)
	}
	for _, f := range []string{prof + ".bare-tuned.1", prof + ".gateway-N.1"} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("profile %s: %v", f, err)
		}
	}
}

func TestBenchCode(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 8 alternating slices, twice, take about 1.5 s")
	}
	c := newBench(t)
	var rep loadgen.CodeReport
	oneJSON(t, c.ok("--mode", "code", "-c", "2", "-d", "200ms", "--json"), &rep)
	if rep.Mode != "code" || rep.CodeErrors != 0 || rep.RefreshErrors != 0 {
		t.Errorf("report %+v; want mode code and no errors", rep)
	}
	if rep.CodeOK < loadgen.Slices || rep.RefreshOK < loadgen.Slices || rep.CodesPerS <= 0 || rep.GrantsPerS <= 0 {
		t.Errorf("report %+v; want exchanges and refreshes in every slice", rep)
	}
	if got := 100 * rep.CodesPerS / rep.GrantsPerS; rep.CodeToRefresh < got-0.01 || rep.CodeToRefresh > got+0.01 {
		t.Errorf("ratio %.2f%%; want %.2f%%", rep.CodeToRefresh, got)
	}
	out, _, err := c.run("--mode", "code", "-c", "2", "-d", "100ms")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"exchanges/s", "refreshes/s", "ratio"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchEmitThenTarget seeds grants into a database, serves it, and
// drives it with --target; the tokens file then holds each chain's newest
// token, which still works.
func TestBenchEmitThenTarget(t *testing.T) {
	c := newBench(t)
	toks := filepath.Join(t.TempDir(), "toks.txt")
	var em emitReport
	oneJSON(t, c.ok("--emit-tokens", toks, "--grants", "4", "--json"), &em)
	before, err := loadgen.ReadTokens(toks)
	if err != nil || len(before) != 4 || em.ClientID == "" || !strings.HasPrefix(em.ClientSecret, "oauthd_cs_") {
		t.Fatalf("emit: %+v, %d tokens, %v", em, len(before), err)
	}
	if fi, err := os.Stat(toks); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("tokens file mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}

	ctx := t.Context()
	logger := slog.New(slog.DiscardHandler)
	srv, err := startBenchServer(ctx, logger, c.db)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop(context.WithoutCancel(ctx), logger)
	target := srv.w.ListenURL + benchTokenPath

	var rep loadgen.RefreshReport
	// -c 3 over 4 tokens: the 3 workers rotate over all 4 chains.
	oneJSON(t, c.ok("--target", target, "--client-id", em.ClientID, "--client-secret", em.ClientSecret,
		"--tokens", toks, "-c", "3", "-d", "100ms", "--json"), &rep)
	if rep.Concurrency != 3 || rep.ChainsUsed != 4 || rep.ChainsAlive != 4 || rep.Errors != 0 || rep.OK < 4 {
		t.Fatalf("target run: %+v; want 3 workers over all 4 chains", rep)
	}
	after, err := loadgen.ReadTokens(toks)
	if err != nil || len(after) != 4 {
		t.Fatalf("tokens after: %d, %v; want 4", len(after), err)
	}
	for i := range 4 {
		if after[i] == before[i] {
			t.Errorf("token %d was not replaced by the chain's newest", i)
		}
	}
	// The newest token is live: one more run continues every chain.
	oneJSON(t, c.ok("--target", target, "--client-id", em.ClientID, "--client-secret", em.ClientSecret,
		"--tokens", toks, "-c", "4", "-d", "50ms", "--json"), &rep)
	if rep.ChainsAlive != 4 || rep.Errors != 0 {
		t.Errorf("second target run: %+v", rep)
	}
}

func TestBenchFlags(t *testing.T) {
	c := newBench(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-c", "0"}, "--concurrency 0"},
		{[]string{"-c", "5000"}, "--concurrency 5000"},
		{[]string{"-d", "11m"}, "--duration 11m0s"},
		{[]string{"-d", "0s"}, "--duration 0s"},
		{[]string{"--mode", "sign"}, `--mode "sign"`},
		{[]string{"--target", "http://127.0.0.1:1/token"}, "--client-id"},
		{[]string{"--target", "http://127.0.0.1:1/token", "--mode", "verify"}, "refresh grants only"},
		{[]string{"--target", "http://10.1.2.3/token", "--client-id", "a", "--client-secret", "b", "--tokens", "x"}, "loopback"},
		{[]string{"--target", "http://127.0.0.1:1/token", "--client-id", "a", "--client-secret", "b", "--tokens", "/nonexistent/toks"}, "tokens file"},
		{[]string{"--target", "http://127.0.0.1:1/token", "--emit-tokens", "x"}, "--emit-tokens"},
		{[]string{"--seed", "10"}, "with --emit-tokens"},
		{[]string{"--emit-tokens", "x", "--seed", "-1"}, "--seed -1"},
		{[]string{"--emit-tokens", "x", "--seed", "100000001"}, "--seed 100000001"},
		{[]string{"--emit-tokens", "x", "--expire-share", "0.5"}, "with --seed"},
		{[]string{"--emit-tokens", "x", "--seed", "10", "--expire-share", "1.5"}, "--expire-share 1.5"},
		{[]string{"--mode", "gateway", "--reps", "0"}, "--reps 0"},
		{[]string{"--mode", "gateway", "--distinct-tokens", "0"}, "--distinct-tokens 0"},
		{[]string{"--mode", "gateway", "--targets", "nginx"}, `--targets "nginx"`},
		{[]string{"--target", "http://127.0.0.1:1/token", "--mode", "gateway"}, "refresh grants only"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			c.fails(tc.want, tc.args...)
		})
	}
}
