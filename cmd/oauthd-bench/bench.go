package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"oauthd/cmd/internal/backend"
	"oauthd/cmd/internal/clitext"
	"oauthd/cmd/internal/wiring"
	"oauthd/cmd/oauthd-bench/internal/loadgen"
)

// Bounds of oauthd-bench: it always stops by itself.
const (
	benchMaxDuration    = 10 * time.Minute
	benchMaxConcurrency = 1024
	benchMaxGrants      = 100_000
	benchTokenPath      = "/v2/auth/oauth2/token"
	benchRedirectURI    = "http://127.0.0.1:9/bench/cb"
)

// benchOptions are the flags of oauthd-bench (with wiring.Globals).
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
	seed         int
	expireShare  float64
	reps         int
	distinct     int
	targets      []string

	cpuProfile string

	progress time.Duration // 1s; tests shorten it
}

// benchLong is the help of oauthd-bench.
const benchLong = `oauthd-bench measures oauthd's token endpoint the way clients use it. It
is the load generator, a command of its own: the product binary, oauthd,
links none of it.

By default it starts the real server in-process on a temporary database,
seeds a user, an approved confidential client and one grant per worker
(issuer Approve, then a real authorization_code exchange over loopback
HTTP), and drives refresh-token chains over loopback HTTP: each worker
always sends its newest refresh token. It prints grants/s, p50/p90/p99
latency, errors by status and chains alive, with a progress line every
second on stderr.

  --target URL --client-id ID --client-secret S --tokens FILE
      drive a running server instead (loopback only); FILE holds one
      refresh token per line (at least --concurrency), each the head of
      one chain; the --concurrency workers rotate over ALL of them (each
      takes the chain idle longest, so a chain is never in two requests
      at once and every chain is sent at least once, even past
      --duration), so a FILE of 10,000 tokens drives 10,000 distinct
      families; the newest token of every live chain is written back to
      FILE at the end.
  --emit-tokens FILE [--grants N]
      seed an approved client and N grants into --db (which must not be in
      use; the grants are made 16 at a time), write their refresh tokens
      to FILE, print the client's credentials, and exit: then run
      "oauthd serve" on that database and drive it with --target or
      ../shared/bench/loadgen.
      --seed M [--expire-share F] also writes M families directly through
      the store (as the code exchange stores them: code tombstone and
      family, no consent grant; random refresh tokens no one holds),
      spread around the N real ones, and prints families/s: in
      batches through the store's benchmark-only SeedFamilies, which
      writes the records the exchange writes (PostgreSQL: COPY; bbolt:
      one transaction a batch, keys in order), elsewhere one exchange
      each, concurrently (the group commit batches them); with F, F of them expire in an hour and one
      expiry sweep, run as if two hours later, is timed, then a second
      one that finds nothing (what each sweep of a steady database
      costs).
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
      the medians of the reps' gateway ÷ bare ratios.`

// newRootCommand is the oauthd-bench command: the bench flags and the
// global settings oauthd's commands take (--db, --master-key-file,
// --log-level, --log-format; flags only: no variable or file sets them).
func newRootCommand() *cobra.Command {
	root := &wiring.Globals{}
	o := benchOptions{progress: time.Second}
	cmd := &cobra.Command{
		Use:           "oauthd-bench [--concurrency 16] [--duration 10s] [--mode refresh|code|verify|gateway] [--json]",
		Short:         "Measure refresh grants/s and latency (or code exchanges/s, or JWT verifications/s) on this machine",
		Long:          benchLong,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd, root)
		},
	}
	cmd.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%w; see `%s --help`", err, cmd.CommandPath())
	})
	root.AddFlags(cmd.Flags())
	o.AddFlags(cmd.Flags())
	return cmd
}

// AddFlags registers the bench's flags.
func (o *benchOptions) AddFlags(fs *pflag.FlagSet) {
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
	fs.IntVar(&o.seed, "seed", 0, "with --emit-tokens: also write this many refresh-token families (with their codes' tombstones) directly through the store, spread around the --grants ones, to measure a large database")
	fs.Float64Var(&o.expireShare, "expire-share", 0, "with --seed: this share (0 to 1) of the seeded families expires in an hour; then one expiry sweep, run as if two hours later, is timed")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured phase (server and load, in-process runs) to this file (--mode gateway: FILE.TARGET.REP, one per run)")
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
		if !loadgen.IsGatewayTarget(t) {
			return fmt.Errorf("--targets %q: use %s or %s", t, strings.Join(loadgen.GatewayTargets, ", "), loadgen.TargetUncached)
		}
	}
	if o.distinct < 1 || o.distinct > benchMaxGrants {
		return fmt.Errorf("--distinct-tokens %d: use 1 to %d", o.distinct, benchMaxGrants)
	}
	if o.grants < 0 || o.grants > benchMaxGrants {
		return fmt.Errorf("--grants %d: use 1 to %d", o.grants, benchMaxGrants)
	}
	if o.seed < 0 || o.seed > benchMaxSeed || (o.seed > 0 && o.emitTokens == "") {
		return fmt.Errorf("--seed %d: use 0 to %d, with --emit-tokens", o.seed, benchMaxSeed)
	}
	if o.expireShare < 0 || o.expireShare > 1 || (o.expireShare > 0 && o.seed == 0) {
		return fmt.Errorf("--expire-share %g: use 0 to 1, with --seed", o.expireShare)
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

func (o *benchOptions) run(ctx context.Context, cmd *cobra.Command, root *wiring.Globals) error {
	if err := o.validate(); err != nil {
		return err
	}
	logger, err := root.Logger(cmd.ErrOrStderr(), slog.LevelWarn)
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
	if backend.Of(root.DB).Shared {
		// On a shared database the in-process server uses that database
		// (its schema is migrated; the seeded user, client and grants stay).
		dbPath = root.DB
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
		stop, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	switch o.mode {
	case "verify":
		rep, err := o.runVerify(ctx, srv, seeded.accessToken, clitext.Lines{W: stderr})
		if err != nil {
			return err
		}
		return o.print(stdout, rep)
	case "code":
		rep, err := o.runCode(ctx, srv, seeded, clitext.Lines{W: stderr})
		if err != nil {
			return err
		}
		return o.print(stdout, rep)
	}
	rep, _, _ := srv.endpoint(seeded).Refresh(ctx, seeded.tokens, len(seeded.tokens), o.duration, loadgen.Progress{W: clitext.Lines{W: stderr}, Every: o.progress})
	rep.Target = "in-process " + srv.w.ListenURL
	if backend.Of(root.DB).Shared {
		rep.Target += " on " + backend.Redact(root.DB)
	}
	rep.RSSMiB = loadgen.RSSMiB()
	return o.print(stdout, rep)
}

// print prints a report as one JSON value (--json) or as text.
func (o *benchOptions) print(w io.Writer, rep interface{ WriteText(io.Writer) error }) error {
	if o.json {
		return clitext.JSON(w, rep)
	}
	return rep.WriteText(clitext.Lines{W: w})
}

// startCPUProfile writes a CPU profile to path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
