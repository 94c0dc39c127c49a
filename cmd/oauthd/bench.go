package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/bits"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/spf13/cobra"
	"golang.org/x/oauth2"

	"oauthd/data"
	"oauthd/data/postgres"
	"oauthd/issuer"
	"oauthd/issuer/admin"
)

// Bounds of `oauthd bench`: it always stops by itself.
const (
	benchMaxDuration    = 10 * time.Minute
	benchMaxConcurrency = 1024
	benchMaxGrants      = 100_000
	benchRequestTimeout = 10 * time.Second
	benchTokenPath      = "/v2/auth/oauth2/token"
	benchRedirectURI    = "http://127.0.0.1:9/bench/cb"
)

// benchOptions are the flags of `oauthd bench`.
type benchOptions struct {
	concurrency  int
	duration     time.Duration
	json         bool
	mode         string
	target       string
	clientID     string
	clientSecret string
	tokens       string
	emitTokens   string
	grants       int
	reps         int
	distinct     int
	targets      []string

	cpuProfile string

	progress time.Duration // 1s; tests shorten it
}

func newBenchCommand(root *rootOptions) *cobra.Command {
	o := benchOptions{progress: time.Second}
	cmd := &cobra.Command{
		Use:   "bench [--concurrency 16] [--duration 10s] [--mode refresh|code|verify|gateway] [--json]",
		Short: "Measure refresh grants/s and latency (or code exchanges/s, or JWT verifications/s) on this machine",
		Long: `bench measures the token endpoint the way clients use it.

By default it starts the real server in-process on a temporary database,
seeds a user, an approved confidential client and one grant per worker
(issuer Approve, then a real authorization_code exchange over loopback
HTTP), and drives refresh-token chains over loopback HTTP: each worker
always sends its newest refresh token. It prints grants/s, p50/p90/p99
latency, errors by status and chains alive, with a progress line every
second on stderr.

  --target URL --client-id ID --client-secret S --tokens FILE
      drive a running server instead (loopback only); FILE holds one
      refresh token per line (at least --concurrency); the newest token of
      every live chain is written back to FILE at the end.
  --emit-tokens FILE [--grants N]
      seed an approved client and N grants into --db (which must not be in
      use), write their refresh tokens to FILE, print the client's
      credentials, and exit: then run "oauthd serve" on that database and
      drive it with --target or ../shared/bench/loadgen.
  --mode code
      authorization_code exchanges/s (PKCE S256, client_secret_post) over
      loopback HTTP against refresh grants/s on the same server, in 4
      alternating slices of each; the codes of a slice are stored just
      before it (as the consent page's Approve makes them; not timed).
  --mode verify
      JWT verifications/s through the guard middleware (in-process,
      --concurrency goroutines, real ES256 access tokens), then the raw
      ES256 signature check with the same key, for the ratio.
  --mode gateway [--reps 3] [--distinct-tokens 10000]
      GET /v2/me with --concurrency keep-alive connections through four
      proxies in front of one tiny upstream, all on loopback in this
      process, each run --duration long, in --reps alternating reps: a
      bare httputil reverse proxy (http.DefaultTransport), the same with
      the gateway's transport and buffer pool, the gateway (as oauthd
      gateway wires it, over a real JWKS) with one token, and the gateway
      with --distinct-tokens tokens in turn. Each run starts fresh proxies
      (an empty token cache). Prints req/s, p50, p99 and non-2xx per run and
      the medians of the reps' gateway ÷ bare ratios.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd, root)
		},
	}
	fs := cmd.Flags()
	fs.IntVarP(&o.concurrency, "concurrency", "c", 16, "concurrent workers (refresh chains, or verifying goroutines)")
	fs.DurationVarP(&o.duration, "duration", "d", 10*time.Second, "measured duration (at most 10m)")
	fs.BoolVar(&o.json, "json", false, "print the report as one JSON value")
	fs.StringVar(&o.mode, "mode", "refresh", "refresh (token endpoint), code (code exchanges against refresh grants), verify (access-token verification) or gateway (oauthd gateway against a bare reverse proxy)")
	fs.IntVar(&o.reps, "reps", 3, "with --mode gateway: alternating reps of every target")
	fs.IntVar(&o.distinct, "distinct-tokens", 10_000, "with --mode gateway: distinct access tokens of the many-tokens workload")
	fs.StringSliceVar(&o.targets, "targets", nil, "with --mode gateway: only these of bare, bare-tuned, gateway-1, gateway-N, and gateway-uncached (the gateway without its token cache, one token), e.g. to profile one")
	fs.StringVar(&o.target, "target", "", "token endpoint URL of a running server on loopback (default: an in-process server)")
	fs.StringVar(&o.clientID, "client-id", "", "with --target: the client's ID")
	fs.StringVar(&o.clientSecret, "client-secret", "", "with --target: the client's secret (client_secret_post)")
	fs.StringVar(&o.tokens, "tokens", "", "with --target: file of refresh tokens, one per line")
	fs.StringVar(&o.emitTokens, "emit-tokens", "", "seed grants into --db, write their refresh tokens to this file and exit")
	fs.IntVar(&o.grants, "grants", 0, "with --emit-tokens: how many grants (default --concurrency)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured phase (server and load, in-process runs) to this file (--mode gateway: FILE.TARGET.REP, one per run)")
	return cmd
}

func (o *benchOptions) validate() error {
	if o.concurrency < 1 || o.concurrency > benchMaxConcurrency {
		return fmt.Errorf("--concurrency %d: use 1 to %d", o.concurrency, benchMaxConcurrency)
	}
	if o.duration <= 0 || o.duration > benchMaxDuration {
		return fmt.Errorf("--duration %s: use a duration above 0 and at most %s", o.duration, benchMaxDuration)
	}
	if o.mode != "refresh" && o.mode != "verify" && o.mode != "code" && o.mode != "gateway" {
		return fmt.Errorf("--mode %q: use refresh, code, verify or gateway", o.mode)
	}
	if o.reps < 1 || o.reps > 20 {
		return fmt.Errorf("--reps %d: use 1 to 20", o.reps)
	}
	for _, t := range o.targets {
		if !slices.Contains(gatewayTargets, t) && t != targetUncached {
			return fmt.Errorf("--targets %q: use %s or %s", t, strings.Join(gatewayTargets, ", "), targetUncached)
		}
	}
	if o.distinct < 1 || o.distinct > benchMaxGrants {
		return fmt.Errorf("--distinct-tokens %d: use 1 to %d", o.distinct, benchMaxGrants)
	}
	if o.grants < 0 || o.grants > benchMaxGrants {
		return fmt.Errorf("--grants %d: use 1 to %d", o.grants, benchMaxGrants)
	}
	if o.target != "" {
		if o.mode != "refresh" {
			return fmt.Errorf("--target drives refresh grants only; drop --mode %s (it runs in-process)", o.mode)
		}
		if o.emitTokens != "" {
			return errors.New("--emit-tokens seeds --db itself; stop the server, emit, then start it (do not combine with --target)")
		}
		if o.clientID == "" || o.clientSecret == "" || o.tokens == "" {
			return errors.New("--target needs --client-id, --client-secret and --tokens FILE (get them with --emit-tokens)")
		}
	}
	return nil
}

func (o *benchOptions) run(ctx context.Context, cmd *cobra.Command, root *rootOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	logger, err := root.logger(cmd, slog.LevelWarn)
	if err != nil {
		return err
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if o.target != "" {
		return o.runTarget(ctx, stdout, stderr)
	}
	if o.emitTokens != "" {
		return o.runEmit(ctx, logger, root, stdout)
	}
	if o.mode == "gateway" {
		return o.runGateway(ctx, stdout, stderr)
	}

	dir, err := os.MkdirTemp("", "oauthd-bench-")
	if err != nil {
		return fmt.Errorf("temporary database: %w", err)
	}
	defer os.RemoveAll(dir)
	dbPath := filepath.Join(dir, "bench.db")
	if postgres.IsURL(root.db) {
		// On PostgreSQL the in-process server uses that database (its
		// schema is migrated; the seeded user, client and grants stay).
		dbPath = root.db
	}
	srv, err := startBenchServer(ctx, logger, dbPath)
	if err != nil {
		return err
	}
	defer srv.stop(ctx, logger)

	seeded, err := seedBench(ctx, srv, o.concurrency)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	switch o.mode {
	case "verify":
		rep, err := o.runVerify(ctx, srv, seeded.accessToken, stderr)
		if err != nil {
			return err
		}
		return rep.print(stdout, o.json)
	case "code":
		rep, err := o.runCode(ctx, srv, seeded, stderr)
		if err != nil {
			return err
		}
		return rep.print(stdout, o.json)
	}
	rep, _ := driveRefresh(ctx, srv.hc, srv.w.listenURL+benchTokenPath, seeded.clientID, seeded.clientSecret, seeded.tokens, o.duration, o.progress, stderr)
	rep.Target = "in-process " + srv.w.listenURL
	if srv.w.pg != nil {
		rep.Target += " on " + postgres.Redact(root.db)
	}
	rep.RSSMiB = rssMiB()
	return rep.print(stdout, o.json)
}

// benchServer is the real server, wired as serve wires it, serving on a
// loopback port.
type benchServer struct {
	w   *wired
	srv *http.Server
	hc  *http.Client
}

func startBenchServer(ctx context.Context, logger *slog.Logger, dbPath string) (*benchServer, error) {
	so := serveOptions{addr: "127.0.0.1:0", codeTTL: time.Minute, refreshIdle: 720 * time.Hour, refreshMax: 8760 * time.Hour, reuseGrace: issuer.DefaultRefreshReuseGrace}
	tuneGC() // as serve runs
	w, err := so.wire(ctx, logger, dbPath, nil)
	if err != nil {
		return nil, err
	}
	s := &benchServer{w: w, srv: w.httpServer(logger), hc: benchHTTPClient(benchMaxConcurrency)}
	go s.srv.Serve(w.ln)
	return s, nil
}

func (s *benchServer) stop(ctx context.Context, logger *slog.Logger) {
	shutdown(ctx, logger, s.srv)
	s.hc.CloseIdleConnections()
	if err := s.w.closeStore(); err != nil {
		logger.Error("bench", "err", err)
	}
}

func benchHTTPClient(conns int) *http.Client {
	return &http.Client{
		Timeout: benchRequestTimeout,
		Transport: &http.Transport{
			Proxy:               nil, // loopback only, never through a proxy
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     30 * time.Second,
			DisableCompression:  true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// seeded is what seedBench made.
type seeded struct {
	clientID, clientSecret string
	userID                 int64
	tokens                 []string // one refresh token per grant
	accessToken            string   // the last grant's access token
}

// seedBench creates a user and an approved confidential client through the
// admin service, then n grants through the real code path: issuer Approve
// mints each code, and the authorization_code exchange runs over loopback
// HTTP against the running server.
func seedBench(ctx context.Context, s *benchServer, n int) (seeded, error) {
	var rb [6]byte
	rand.Read(rb[:])
	tag := hex.EncodeToString(rb[:])
	email := "bench-" + tag + "@example.com"
	u, err := s.w.local.AddUser(ctx, admin.NewUser{Email: email, Username: "bench_" + tag, Name: "Bench User", Password: data.NewSecret("")})
	if err != nil {
		return seeded{}, fmt.Errorf("user: %w", err)
	}
	c, err := s.w.local.CreateClient(ctx, admin.NewClient{Owner: email, Name: "oauthd bench " + tag, RedirectURIs: []string{benchRedirectURI}, Scopes: []string{"PROFILE_READ", "BOOKING_READ"}})
	if err != nil {
		return seeded{}, fmt.Errorf("client: %w", err)
	}
	if _, err := s.w.local.ApproveClient(ctx, c.ClientID); err != nil {
		return seeded{}, fmt.Errorf("approve client: %w", err)
	}
	out := seeded{clientID: c.ClientID, clientSecret: c.ClientSecret, userID: u.ID}
	tokenURL := s.w.listenURL + benchTokenPath
	for i := range n {
		if err := ctx.Err(); err != nil {
			return seeded{}, err
		}
		verifier := oauth2.GenerateVerifier()
		q := url.Values{
			"response_type":         {"code"},
			"client_id":             {c.ClientID},
			"redirect_uri":          {benchRedirectURI},
			"scope":                 {"PROFILE_READ BOOKING_READ"},
			"state":                 {strconv.Itoa(i)},
			"code_challenge":        {oauth2.S256ChallengeFromVerifier(verifier)},
			"code_challenge_method": {"S256"},
		}
		redirect, err := s.w.iss.Approve(ctx, q, u.ID)
		if err != nil {
			return seeded{}, fmt.Errorf("approve grant %d: %w", i, err)
		}
		ru, err := url.Parse(redirect)
		if err != nil || ru.Query().Get("code") == "" {
			return seeded{}, fmt.Errorf("approve grant %d: no code in the redirect", i)
		}
		form := url.Values{
			"grant_type": {"authorization_code"}, "code": {ru.Query().Get("code")}, "redirect_uri": {benchRedirectURI},
			"code_verifier": {verifier}, "client_id": {c.ClientID}, "client_secret": {c.ClientSecret},
		}
		status, tr, err := postToken(ctx, s.hc, tokenURL, form.Encode())
		if err != nil {
			return seeded{}, fmt.Errorf("exchange code %d: %w", i, err)
		}
		if status != http.StatusOK {
			return seeded{}, fmt.Errorf("exchange code %d: HTTP %d %s", i, status, tr.Error)
		}
		out.tokens = append(out.tokens, tr.RefreshToken)
		out.accessToken = tr.AccessToken
	}
	return out, nil
}

// tokenReply is the part of a token response bench reads.
type tokenReply struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	Error        string `json:"error"`
}

// postToken posts a form to the token endpoint; status 0 means a transport
// error (returned).
func postToken(ctx context.Context, hc *http.Client, tokenURL, body string) (int, tokenReply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(body))
	if err != nil {
		return 0, tokenReply{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, tokenReply{}, err
	}
	defer resp.Body.Close()
	var tr tokenReply
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return 0, tokenReply{}, err
	}
	if err := json.Unmarshal(b, &tr); err != nil && resp.StatusCode == http.StatusOK {
		return resp.StatusCode, tr, fmt.Errorf("token response: %w", err)
	}
	if resp.StatusCode == http.StatusOK && tr.RefreshToken == "" {
		return resp.StatusCode, tr, errors.New("token response without refresh_token")
	}
	return resp.StatusCode, tr, nil
}

// refreshReport is the result of a refresh run.
type refreshReport struct {
	Mode        string           `json:"mode"`
	Target      string           `json:"target"`
	Concurrency int              `json:"concurrency"`
	DurationS   float64          `json:"duration_s"`
	Requests    int64            `json:"requests"`
	OK          int64            `json:"ok"`
	GrantsPerS  float64          `json:"grants_per_s"`
	LatencyMS   latencyMS        `json:"latency_ms"`
	ByStatus    map[string]int64 `json:"by_status"`
	Errors      int64            `json:"errors"`
	ChainsAlive int              `json:"chains_alive"`
	Chains      int              `json:"chains"`
	RSSMiB      float64          `json:"rss_mib,omitempty"` // in-process runs: the whole process (server and load)
}

type latencyMS struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func (r refreshReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return printJSON(w, r)
	}
	codes := make([]string, 0, len(r.ByStatus))
	for k := range r.ByStatus {
		codes = append(codes, k)
	}
	sort.Strings(codes)
	var by []string
	for _, k := range codes {
		by = append(by, fmt.Sprintf("%s=%d", k, r.ByStatus[k]))
	}
	fmt.Fprintf(w, "target       %s  workers=%d  measured=%.1fs\n", r.Target, r.Concurrency, r.DurationS)
	fmt.Fprintf(w, "grants/s     %.0f  (ok %d of %d requests)\n", r.GrantsPerS, r.OK, r.Requests)
	fmt.Fprintf(w, "latency ms   p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n", r.LatencyMS.P50, r.LatencyMS.P90, r.LatencyMS.P99, r.LatencyMS.Max)
	fmt.Fprintf(w, "by status    %s  (errors %d)\n", strings.Join(by, " "), r.Errors)
	fmt.Fprintf(w, "chains alive %d of %d\n", r.ChainsAlive, r.Chains)
	if r.RSSMiB > 0 {
		fmt.Fprintf(w, "process RSS  %.1f MiB (server and load generator)\n", r.RSSMiB)
	}
	return nil
}

// driveRefresh runs one refresh chain per token for d: each worker sends
// its newest refresh token (client_secret_post) and keeps the one it gets
// back. 429 and 5xx (and transport errors) are retried with the same token
// after a pause; any other error ends the chain. Requests in flight at the
// deadline are completed, not cancelled, so no rotated token is lost. It
// returns the report and the newest token of every live chain.
func driveRefresh(ctx context.Context, hc *http.Client, tokenURL, clientID, secret string, tokens []string, d, every time.Duration, progress io.Writer) (refreshReport, []string) {
	rep, live, _ := driveChains(ctx, hc, tokenURL, clientID, secret, tokens, d, every, progress)
	return rep, live
}

// driveChains is driveRefresh, also returning the latency histogram;
// progress lines go to progress every every, when both are set.
func driveChains(ctx context.Context, hc *http.Client, tokenURL, clientID, secret string, tokens []string, d, every time.Duration, progress io.Writer) (refreshReport, []string, *histogram) {
	n := len(tokens)
	var (
		ok, reqs, fails atomic.Int64
		alive           atomic.Int64
		mu              sync.Mutex
		byStatus        = map[string]int64{}
		hist            = new(histogram)
		newest          = make([]string, n)
	)
	alive.Store(int64(n))
	prefix := "grant_type=refresh_token&client_id=" + url.QueryEscape(clientID) + "&client_secret=" + url.QueryEscape(secret) + "&refresh_token="
	start := time.Now()
	deadline := start.Add(d)
	// Requests are not cancelled at the deadline (see above): they get
	// their own bounded context.
	reqCtx := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var h histogram
			local := map[string]int64{}
			tok := tokens[i]
			live := true
			// Every chain is exercised at least once, however short d.
			for first := true; first || (time.Now().Before(deadline) && ctx.Err() == nil); first = false {
				t0 := time.Now()
				status, tr, err := postToken(reqCtx, hc, tokenURL, prefix+url.QueryEscape(tok))
				h.add(time.Since(t0))
				reqs.Add(1)
				key := strconv.Itoa(status)
				if status == 0 {
					key = "net"
				}
				local[key]++
				if status == http.StatusOK && err == nil {
					ok.Add(1)
					tok = tr.RefreshToken
					continue
				}
				fails.Add(1)
				if status == 0 || status == http.StatusTooManyRequests || status >= 500 {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				live = false
				alive.Add(-1)
				break
			}
			mu.Lock()
			hist.merge(&h)
			for k, v := range local {
				byStatus[k] += v
			}
			if live {
				newest[i] = tok
			}
			mu.Unlock()
		})
	}
	stopProgress := make(chan struct{})
	var pwg sync.WaitGroup
	if progress != nil && every > 0 {
		pwg.Go(func() {
			t := time.NewTicker(every)
			defer t.Stop()
			var last int64
			for {
				select {
				case <-stopProgress:
					return
				case now := <-t.C:
					cur := ok.Load()
					fmt.Fprintf(progress, "bench: %5.1fs  ok %d (%.0f/s now)  errors %d  chains alive %d/%d\n",
						now.Sub(start).Seconds(), cur, float64(cur-last)/every.Seconds(), fails.Load(), alive.Load(), n)
					last = cur
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stopProgress)
	pwg.Wait()

	var live []string
	for _, t := range newest {
		if t != "" {
			live = append(live, t)
		}
	}
	return refreshReport{
		Mode: "refresh", Concurrency: n, DurationS: elapsed.Seconds(),
		Requests: reqs.Load(), OK: ok.Load(), GrantsPerS: float64(ok.Load()) / elapsed.Seconds(),
		LatencyMS: hist.latency(),
		ByStatus:  byStatus, Errors: fails.Load(), ChainsAlive: int(alive.Load()), Chains: n,
	}, live, hist
}

// histogram is a log-linear latency histogram in microseconds: 32
// sub-buckets per power of two, so a quantile is within about 3%.
type histogram struct {
	counts [64 * 32]uint64
	n      uint64
	maxUS  uint64
}

func (h *histogram) add(d time.Duration) {
	us := uint64(d.Microseconds())
	h.counts[bucketOf(us)]++
	h.n++
	h.maxUS = max(h.maxUS, us)
}

func bucketOf(us uint64) int {
	if us < 32 {
		return int(us)
	}
	e := bits.Len64(us) - 6 // us >> e is in [32, 64)
	return (e+1)*32 + int(us>>e) - 32
}

// upper is the largest value of bucket i, in microseconds.
func upper(i int) uint64 {
	if i < 32 {
		return uint64(i)
	}
	e := i/32 - 1
	m := uint64(i%32 + 32)
	return (m+1)<<e - 1
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.maxUS = max(h.maxUS, o.maxUS)
}

// quantile returns the q-quantile in milliseconds (0 without samples).
func (h *histogram) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return float64(min(upper(i), h.maxUS)) / 1000
		}
	}
	return h.max()
}

func (h *histogram) max() float64 { return float64(h.maxUS) / 1000 }

// latency is h's summary in milliseconds.
func (h *histogram) latency() latencyMS {
	return latencyMS{P50: h.quantile(0.50), P90: h.quantile(0.90), P99: h.quantile(0.99), Max: h.max()}
}

// runTarget drives a running server with tokens from o.tokens and writes
// the live chains' newest tokens back to it.
func (o *benchOptions) runTarget(ctx context.Context, stdout, stderr io.Writer) error {
	if err := checkLoopback(ctx, o.target); err != nil {
		return err
	}
	toks, err := readTokens(o.tokens)
	if err != nil {
		return err
	}
	if len(toks) < o.concurrency {
		return fmt.Errorf("%s has %d tokens; --concurrency %d needs at least that many (seed more with --emit-tokens --grants N)", o.tokens, len(toks), o.concurrency)
	}
	hc := benchHTTPClient(o.concurrency)
	defer hc.CloseIdleConnections()
	rep, live := driveRefresh(ctx, hc, o.target, o.clientID, o.clientSecret, toks[:o.concurrency], o.duration, o.progress, stderr)
	rep.Target = o.target
	// Unused lines are kept; dead chains dropped.
	if err := writeTokens(o.tokens, append(live, toks[o.concurrency:]...)); err != nil {
		return err
	}
	return rep.print(stdout, o.json)
}

// checkLoopback refuses a target that does not resolve to loopback only.
func checkLoopback(ctx context.Context, target string) error {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--target %q: give the token endpoint URL, e.g. http://127.0.0.1:8080%s", target, benchTokenPath)
	}
	host := u.Hostname()
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		if err != nil {
			return fmt.Errorf("--target %q: %w", target, err)
		}
		for _, a := range addrs {
			ips = append(ips, a.IP)
		}
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Errorf("--target %q: bench drives loopback servers only (127.0.0.0/8 or ::1)", target)
		}
	}
	if len(ips) == 0 {
		return fmt.Errorf("--target %q: the host does not resolve", target)
	}
	return nil
}

func readTokens(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			out = append(out, t)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	return out, nil
}

// writeTokens replaces path (mode 0600: the lines are live credentials).
func writeTokens(path string, toks []string) error {
	tmp := path + ".tmp"
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("write tokens: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write tokens: %w", err)
	}
	return nil
}

// emitReport is what --emit-tokens prints.
type emitReport struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	TokensFile   string `json:"tokens_file"`
	Grants       int    `json:"grants"`
	DB           string `json:"db"`
}

// runEmit seeds grants into --db through an in-process server and writes
// the refresh tokens.
func (o *benchOptions) runEmit(ctx context.Context, logger *slog.Logger, root *rootOptions, stdout io.Writer) error {
	n := o.grants
	if n == 0 {
		n = o.concurrency
	}
	mk, err := root.masterKey()
	if err != nil {
		return err
	}
	so := serveOptions{addr: "127.0.0.1:0", codeTTL: time.Minute, refreshIdle: 720 * time.Hour, refreshMax: 8760 * time.Hour, reuseGrace: issuer.DefaultRefreshReuseGrace}
	w, err := so.wire(ctx, logger, root.db, mk)
	if err != nil {
		return err
	}
	s := &benchServer{w: w, srv: w.httpServer(logger), hc: benchHTTPClient(4)}
	go s.srv.Serve(w.ln)
	seededGrants, err := seedBench(ctx, s, n)
	s.stop(ctx, logger)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if err := writeTokens(o.emitTokens, seededGrants.tokens); err != nil {
		return err
	}
	rep := emitReport{ClientID: seededGrants.clientID, ClientSecret: seededGrants.clientSecret, TokensFile: o.emitTokens, Grants: n, DB: root.db}
	if o.json {
		return printJSON(stdout, rep)
	}
	return fields(stdout, "client_id", rep.ClientID, "client_secret", rep.ClientSecret, "tokens_file", rep.TokensFile,
		"grants", strconv.Itoa(n), "db", rep.DB)
}

// verifyReport is the result of --mode verify.
type verifyReport struct {
	Mode              string  `json:"mode"`
	Concurrency       int     `json:"concurrency"`
	DurationS         float64 `json:"duration_s"` // per phase, in 4 alternating slices
	Alg               string  `json:"alg"`
	MiddlewarePerS    float64 `json:"middleware_verifies_per_s"`
	MiddlewareErrors  int64   `json:"middleware_errors"`
	RawPerS           float64 `json:"raw_verifies_per_s"`
	RawErrors         int64   `json:"raw_errors"`
	MiddlewareToRawPc float64 `json:"middleware_to_raw_percent"`
}

func (r verifyReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		return printJSON(w, r)
	}
	fmt.Fprintf(w, "verify       %s access tokens, %d goroutines, %.1fs per phase\n", r.Alg, r.Concurrency, r.DurationS)
	fmt.Fprintf(w, "middleware   %.0f verifies/s (guard: route match, signature, claims, scope; errors %d)\n", r.MiddlewarePerS, r.MiddlewareErrors)
	fmt.Fprintf(w, "raw %s    %.0f verifies/s (signature only, same key; errors %d)\n", r.Alg, r.RawPerS, r.RawErrors)
	fmt.Fprintf(w, "ratio        %.0f%%\n", r.MiddlewareToRawPc)
	return nil
}

// runVerify measures the guard middleware with a real access token of the
// in-process server, then the raw signature check with the same key.
func (o *benchOptions) runVerify(ctx context.Context, s *benchServer, token string, progress io.Writer) (verifyReport, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return verifyReport{}, errors.New("the seeded access token is not a JWT")
	}
	var hdr struct{ Kid, Alg string }
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &hdr) != nil {
		return verifyReport{}, errors.New("the seeded access token has a bad header")
	}
	pub, alg, err := s.w.km.Key(ctx, hdr.Kid)
	if err != nil {
		return verifyReport{}, fmt.Errorf("signing key: %w", err)
	}
	method := jwt.GetSigningMethod(alg)
	if method == nil {
		return verifyReport{}, fmt.Errorf("unsupported alg %s", alg)
	}
	signed := parts[0] + "." + parts[1]
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return verifyReport{}, errors.New("the seeded access token has a bad signature encoding")
	}
	h := s.w.guard.HTTP(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))

	newMiddlewareOp := func() func() bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/v2/me", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		w := &statusWriter{h: http.Header{}}
		return func() bool {
			w.status = http.StatusOK
			h.ServeHTTP(w, req)
			return w.status == http.StatusOK
		}
	}
	if !newMiddlewareOp()() {
		return verifyReport{}, errors.New("the guard refused the seeded access token")
	}
	newRawOp := func() func() bool {
		return func() bool { return method.Verify(signed, sig, pub) == nil }
	}
	// The phases alternate in slices of the duration, so that a change in
	// the machine's load hits both alike.
	const slices = 4
	slice := o.duration / slices
	var mwOps, mwErr, rawOps, rawErr int64
	var mwTime, rawTime time.Duration
	for i := range slices {
		n, f, d := o.spin(ctx, slice, fmt.Sprintf("middleware %d/%d", i+1, slices), progress, newMiddlewareOp)
		mwOps, mwErr, mwTime = mwOps+n, mwErr+f, mwTime+d
		n, f, d = o.spin(ctx, slice, fmt.Sprintf("raw %s %d/%d", alg, i+1, slices), progress, newRawOp)
		rawOps, rawErr, rawTime = rawOps+n, rawErr+f, rawTime+d
	}
	mwRate, rawRate := float64(mwOps)/mwTime.Seconds(), float64(rawOps)/rawTime.Seconds()
	rep := verifyReport{
		Mode: "verify", Concurrency: o.concurrency, DurationS: o.duration.Seconds(), Alg: alg,
		MiddlewarePerS: mwRate, MiddlewareErrors: mwErr, RawPerS: rawRate, RawErrors: rawErr,
	}
	if rawRate > 0 {
		rep.MiddlewareToRawPc = 100 * mwRate / rawRate
	}
	return rep, nil
}

// spin runs o.concurrency goroutines, each calling the function newOp
// gives it, for d, and returns the successes, the failures and the time
// taken.
func (o *benchOptions) spin(ctx context.Context, d time.Duration, name string, progress io.Writer, newOp func() func() bool) (int64, int64, time.Duration) {
	var done, fails atomic.Int64
	start := time.Now()
	deadline := start.Add(d)
	stop := make(chan struct{})
	var pwg sync.WaitGroup
	if progress != nil && o.progress > 0 {
		pwg.Go(func() {
			t := time.NewTicker(o.progress)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case now := <-t.C:
					fmt.Fprintf(progress, "bench: %s %5.1fs  %d verifies (%.0f/s)\n", name, now.Sub(start).Seconds(), done.Load(), float64(done.Load())/now.Sub(start).Seconds())
				}
			}
		})
	}
	var wg sync.WaitGroup
	for range o.concurrency {
		wg.Go(func() {
			op := newOp()
			for ctx.Err() == nil {
				// Check the clock every 64 operations, not each time.
				for range 64 {
					if op() {
						done.Add(1)
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
	elapsed := time.Since(start)
	close(stop)
	pwg.Wait()
	return done.Load(), fails.Load(), elapsed
}

// statusWriter is a ResponseWriter that keeps only the status.
type statusWriter struct {
	h      http.Header
	status int
}

func (w *statusWriter) Header() http.Header         { return w.h }
func (w *statusWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *statusWriter) WriteHeader(s int)           { w.status = s }

// rssMiB is this process's resident set size (Linux), or 0.
func rssMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}
