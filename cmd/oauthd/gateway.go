package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"oauthd/cmd/internal/wiring"
	"oauthd/keys/guard"
	"oauthd/keys/verify"
)

// gatewayOptions are the flags of `oauthd gateway`.
type gatewayOptions struct {
	listen   string
	upstream string
	issuer   string
	routes   string
	jwksURL  string
	audience []string
	// publicURL is the scheme and authority clients call the gateway at
	// (DPoP proofs name it in htu); dpopWindow the proofs' iat window.
	publicURL  string
	dpopWindow time.Duration
	// trustHost: without publicURL, take DPoP's htu from the request's
	// Host header (--dpop-trust-host, an explicit opt-in).
	trustHost bool
	feed      feedOptions // gateway_feed.go
	cache     int
	trace     wiring.Tracing

	// ready, when set (tests), is called with the listening address.
	ready func(addr net.Addr)
}

// AddFlags registers the gateway's flags, each with its default (a
// constant of the package that owns the setting). A new flag is one line
// here (its variable OAUTHD_GATEWAY_<NAME> and file key gateway.<name>
// follow from its name, docs/CONFIG.md), plus its rule in config if it has one.
func (o *gatewayOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8081", "address to listen on")
	fs.StringVar(&o.upstream, "upstream", "", "base URL of the API server to protect, e.g. http://127.0.0.1:3000 (required)")
	fs.StringVar(&o.issuer, "issuer", "", "the issuer's base URL, the iss of its tokens (required)")
	fs.StringVar(&o.routes, "routes", "", "JSON file of routes to add to (or replace in) the built-in route table")
	fs.StringVar(&o.jwksURL, "jwks-url", "", "the issuer's JWKS URL (default ISSUER/.well-known/jwks.json)")
	fs.StringSliceVar(&o.audience, "audience", nil, "an aud tokens may carry (repeatable; comma-separated in the variable): the issuer's, or this API's resource identifier (RFC 8707), e.g. https://api.example.com/mcp, so that tokens for other APIs are refused (default the issuer)")
	fs.StringVar(&o.publicURL, "public-url", "", "scheme and host clients call the gateway at, e.g. https://api.example.com; DPoP proofs must name it (required unless --dpop-trust-host; X-Forwarded-* is never trusted)")
	fs.BoolVar(&o.trustHost, "dpop-trust-host", false,
		"without --public-url, check DPoP proofs' htu against each request's Host header; only behind a proxy that sets Host itself")
	fs.DurationVar(&o.dpopWindow, "dpop-window", verify.DefaultDPoPWindow, "how far a DPoP proof's iat may be from the gateway's clock, either way; replayed proofs are remembered (in memory, per process) this long; between 5s and 10m")
	o.feed.AddFlags(fs)
	o.trace.AddFlags(fs, "oauthd-gateway")
	fs.IntVar(&o.cache, "token-cache", verify.DefaultCacheEntries, "how many verified tokens to remember (about 0.7 KiB each); 0 verifies every request in full")
}

func newGatewayCommand() *cobra.Command { return newGatewayCommandWith(&gatewayOptions{}) }

// newGatewayCommandWith builds the command over o (tests set o.ready).
func newGatewayCommandWith(o *gatewayOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gateway --upstream URL --issuer URL [--listen ADDR] [--routes FILE]",
		Short: "Run a reverse proxy that enforces token scopes in front of an API server",
		Long: `gateway verifies the bearer token of every request offline (against the
issuer's JWKS), enforces the route table (the built-in routes of the
scheduling API plus those of --routes), and forwards allowed requests to
--upstream with the headers X-Oauthd-User-Id, X-Oauthd-Client-Id,
X-Oauthd-Scopes and X-Oauthd-Unrestricted (any X-Oauthd-* header sent by
the caller is removed first). GET /healthz answers the gateway's own health.

Verified tokens are remembered (--token-cache, by default 32768 of them):
a token seen before costs no signature check while it is unexpired and its
signing key is still in the issuer's JWKS; the route's scopes are checked
on every request.`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd)
		},
	}
	o.AddFlags(cmd.Flags())
	makeConfigurable(cmd, "gateway", "OAUTHD_GATEWAY_")
	return cmd
}

// config is every rule of the gateway's settings, checked before anything
// is fetched or listened on.
func (o *gatewayOptions) config() (*wiring.GatewayConfig, error) {
	if o.upstream == "" {
		return nil, errors.New("--upstream is required: the base URL of the API server to protect (or set OAUTHD_GATEWAY_UPSTREAM)")
	}
	up, ok := wiring.HTTPURL(o.upstream)
	if !ok {
		return nil, fmt.Errorf("--upstream %q must be an absolute http or https URL such as http://127.0.0.1:3000", o.upstream)
	}
	if o.issuer == "" {
		return nil, errors.New("--issuer is required: the base URL of the oauthd server that issues the tokens (or set OAUTHD_GATEWAY_ISSUER)")
	}
	if _, ok := wiring.HTTPURL(o.issuer); !ok {
		return nil, fmt.Errorf("--issuer %q must be an absolute http or https URL, the issuer's base URL", o.issuer)
	}
	c := &wiring.GatewayConfig{Upstream: up, Issuer: o.issuer, JWKSURL: o.jwksURL, Audience: o.audience,
		PublicURL: o.publicURL, DPoPWindow: o.dpopWindow}
	if err := wiring.CheckDPoPWindow(o.dpopWindow); err != nil {
		return nil, err
	}
	if err := cmp.Or(o.feed.check(), o.trace.Check()); err != nil {
		return nil, err
	}
	if o.publicURL == "" && !o.trustHost {
		// A DPoP-bound token (RFC 9449) can arrive from any client the
		// operator requires DPoP of; its proof must name this gateway.
		return nil, errors.New("--public-url is required: DPoP proofs name the URL clients call (htu), and without it the gateway would take it from the Host header a client chooses. " +
			"Set --public-url https://api.example.com (env OAUTHD_GATEWAY_PUBLIC_URL), or pass --dpop-trust-host when a proxy you trust sets Host")
	}
	if o.publicURL != "" {
		if u, ok := wiring.HTTPURL(o.publicURL); !ok || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("--public-url %q must be a scheme and host such as https://api.example.com", o.publicURL)
		}
	}
	if c.JWKSURL == "" {
		c.JWKSURL = strings.TrimRight(o.issuer, "/") + "/.well-known/jwks.json"
	} else if _, ok := wiring.HTTPURL(c.JWKSURL); !ok {
		return nil, fmt.Errorf("--jwks-url %q must be an absolute http or https URL", c.JWKSURL)
	}
	if len(c.Audience) == 0 {
		c.Audience = []string{o.issuer}
	}
	for _, a := range c.Audience {
		if a == "" {
			return nil, errors.New("--audience: an empty audience; give the issuer's URL or this API's resource identifier")
		}
	}
	switch {
	case o.cache < 0:
		return nil, fmt.Errorf("--token-cache %d: give a number of tokens, or 0 to turn the cache off", o.cache)
	case o.cache == 0:
		c.Cache = -1
	default:
		c.Cache = o.cache
	}
	c.Table = guard.DefaultTable()
	if o.routes != "" {
		extra, err := guard.LoadTableFile(o.routes)
		if err != nil {
			return nil, fmt.Errorf("%w (fix the file or drop --routes)", err)
		}
		c.Table = c.Table.Merge(extra)
	}
	return c, nil
}

// run checks the settings, wires the gateway, fetches the issuer's keys
// and feed once, then serves until ctx is done.
func (o *gatewayOptions) run(ctx context.Context, cmd *cobra.Command) error {
	if _, err := configure(cmd); err != nil {
		return err
	}
	logger, err := wiring.NewLogger(cmd.ErrOrStderr(), flagValue(cmd, "log-level"), flagValue(cmd, "log-format"), slog.LevelInfo)
	if err != nil {
		return err
	}
	logger = logger.With("component", "gateway")
	cfg, err := o.config()
	if err != nil {
		return err
	}
	warnUnknownEnv(logger)
	gw, feed, err := o.build(cfg, logger)
	if err != nil {
		return err
	}

	stopTracing, err := o.trace.Start(ctx, logger)
	if err != nil {
		return err
	}
	defer stopTracing()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("gateway: listen on %s: %w (choose another --listen address)", o.listen, err)
	}
	srv := &http.Server{
		Handler:           o.trace.Handler(gw.Handler, "gateway", nil), // a caller's traceparent is linked, not followed
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}

	// Warm the key cache; an issuer that is not up yet is not fatal, the
	// key set fetches again on the first token.
	if err := gw.Keys.Refresh(ctx); err != nil {
		logger.WarnContext(ctx, "jwks not fetched yet", "url", cfg.JWKSURL, "err", err)
	}
	if feed != nil {
		// The first fetch before listening, then every interval.
		feedCtx, stopFeed := context.WithCancel(ctx)
		defer stopFeed()
		if err := feed.Refresh(feedCtx); err != nil {
			logger.WarnContext(ctx, "revoked-grants feed not fetched yet", "url", o.feed.url, "err", err)
		}
		go feed.Run(feedCtx)
	}
	logger.InfoContext(ctx, "gateway listening", "addr", ln.Addr().String(),
		"upstream", cfg.Upstream.String(), "issuer", cfg.Issuer, "jwks_url", cfg.JWKSURL, "routes", len(cfg.Table.Routes()),
		"token_cache", max(cfg.Cache, 0))
	if o.ready != nil {
		o.ready(ln.Addr())
	}
	return serveGateway(ctx, srv, ln, logger)
}

// build wires the gateway of cfg with the issuer's revoked-grants feed
// when it is on (the feed is nil otherwise).
func (o *gatewayOptions) build(cfg *wiring.GatewayConfig, logger *slog.Logger) (*wiring.Gateway, *verify.RevocationFeed, error) {
	var feed *verify.RevocationFeed
	gw, err := cfg.Build(logger, func(keySet verify.KeySource) (verify.RevokedGrants, error) {
		f, err := o.feed.follower(cfg.Issuer, keySet, logger)
		if f == nil || err != nil {
			return nil, err // a nil *RevocationFeed must not become a non-nil interface
		}
		feed = f
		return f, nil
	})
	return gw, feed, err
}

// serveGateway serves srv on ln until ctx is done, then shuts it down
// with a fresh 10 s deadline.
func serveGateway(ctx context.Context, srv *http.Server, ln net.Listener, logger *slog.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("gateway: serve: %w", err)
	case <-ctx.Done():
	}
	logger.InfoContext(ctx, "gateway shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("gateway: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("gateway: serve: %w", err)
	}
	return nil
}
