package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"oauthd/consent"
	"oauthd/consent/handover"
	"oauthd/consent/settings"
	"oauthd/data"
	"oauthd/data/bolt"
	"oauthd/data/cache"
	"oauthd/data/password"
	"oauthd/data/postgres"
	"oauthd/issuer"
	"oauthd/issuer/admin"
	"oauthd/issuer/throttle"
	"oauthd/keys"
	"oauthd/keys/guard"
	"oauthd/keys/verify"
)

// serveOptions are the flags of `oauthd serve`.
type serveOptions struct {
	addr        string
	baseURL     string
	appURL      string
	demo        bool
	codeTTL     time.Duration
	refreshIdle time.Duration
	refreshMax  time.Duration
	reuseGrace  time.Duration
	dpopWindow  time.Duration
	debugAddr   string
	pwSlots     int
	proxies     []string
	// The login handover (docs/LOGIN-HANDOVER.md): all three or none.
	loginURL, loginIssuer, loginJWKS string

	now func() time.Time // the clock of the issuer, keys, verifier and pages; nil: time.Now (tests inject one)
}

// serveDefaults are serve's lifetimes when no flag or environment
// variable sets them (bench's in-process server runs with them too).
func serveDefaults() serveOptions {
	return serveOptions{codeTTL: time.Minute, refreshIdle: 720 * time.Hour, refreshMax: 8760 * time.Hour, reuseGrace: issuer.DefaultRefreshReuseGrace}
}

// AddFlags registers the serve flags; defaults come from OAUTHD_ADDR,
// OAUTHD_BASE_URL and OAUTHD_APP_URL, and serveDefaults.
func (o *serveOptions) AddFlags(fs *pflag.FlagSet) {
	d := serveDefaults()
	fs.StringVar(&o.addr, "addr", envOr("OAUTHD_ADDR", "127.0.0.1:8080"), "listen address (env OAUTHD_ADDR); port 0 picks a free port")
	fs.StringVar(&o.baseURL, "base-url", os.Getenv("OAUTHD_BASE_URL"), "public API base URL, the token issuer (env OAUTHD_BASE_URL; default http://<listen address>)")
	fs.StringVar(&o.appURL, "app-url", os.Getenv("OAUTHD_APP_URL"), "public URL of the consent pages (env OAUTHD_APP_URL; default http://<listen address>)")
	fs.StringVar(&o.loginURL, "login-url", os.Getenv("OAUTHD_LOGIN_URL"), "hand the login to the platform: its login page (env OAUTHD_LOGIN_URL; needs --login-issuer and --login-jwks; default: the built-in login form)")
	fs.StringVar(&o.loginIssuer, "login-issuer", os.Getenv("OAUTHD_LOGIN_ISSUER"), "the iss of the platform's login assertions (env OAUTHD_LOGIN_ISSUER)")
	fs.StringVar(&o.loginJWKS, "login-jwks", os.Getenv("OAUTHD_LOGIN_JWKS"), "the platform's public keys: a JWKS URL, or a JWKS or PEM file (env OAUTHD_LOGIN_JWKS)")
	fs.BoolVar(&o.demo, "demo", false, "seed a demo user and an approved demo client and print how to use them")
	fs.DurationVar(&o.codeTTL, "code-ttl", d.codeTTL, "authorization code lifetime (at most 10m)")
	fs.DurationVar(&o.refreshIdle, "refresh-idle", d.refreshIdle, "refresh token idle lifetime, renewed by each refresh")
	fs.DurationVar(&o.refreshMax, "refresh-max", d.refreshMax, "refresh token absolute lifetime from the authorization")
	fs.DurationVar(&o.reuseGrace, "refresh-reuse-grace", envDuration("OAUTHD_REFRESH_REUSE_GRACE", d.reuseGrace),
		"within this time after a rotation, the previous refresh token may be presented once more (a lost response) and rotates again instead of revoking the grant; 0 disables (env OAUTHD_REFRESH_REUSE_GRACE)")
	fs.DurationVar(&o.dpopWindow, "dpop-window", verify.DefaultDPoPWindow, "how far a DPoP proof's iat may be from the server's clock, either way (RFC 9449 §11.1); between 5s and 10m")
	fs.StringSliceVar(&o.proxies, "trusted-proxy", envList("OAUTHD_TRUSTED_PROXIES"), "CIDR of a reverse proxy whose X-Forwarded-For is believed (repeatable; env OAUTHD_TRUSTED_PROXIES, comma-separated); default none: the source address is the TCP peer's")
	fs.IntVar(&o.pwSlots, "password-slots", 0, "password checks (argon2id, 19 MiB each) that run at once; default the usable cores")
	fs.StringVar(&o.debugAddr, "debug-addr", os.Getenv("OAUTHD_DEBUG_ADDR"), "serve Go's pprof profiles at http://<addr>/debug/pprof/ (loopback only; env OAUTHD_DEBUG_ADDR; default off)")
}

func newServeCommand(root *rootOptions) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:8080] [--base-url URL] [--app-url URL] [--demo]",
		Short: "Run the authorization server (creates the database and the first keys when empty)",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd, root)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// run wires everything (docs/DESIGN.md "serve wiring"), serves until ctx is
// done, then shuts down in order.
func (o *serveOptions) run(ctx context.Context, cmd *cobra.Command, root *rootOptions) (err error) {
	logger, err := root.logger(cmd, slog.LevelInfo)
	if err != nil {
		return err
	}
	if o.codeTTL <= 0 || o.codeTTL > issuer.MaxCodeTTL {
		return fmt.Errorf("--code-ttl %s: use a duration between 1s and 10m", o.codeTTL)
	}
	if err := o.checkReuseGrace(); err != nil {
		return err
	}
	if err := o.checkFlags(); err != nil {
		return err // before anything is opened: a typo never leaves a new database behind
	}
	tuneGC()
	if o.pwSlots < 0 {
		return fmt.Errorf("--password-slots %d: use 1 or more (0 means the usable cores)", o.pwSlots)
	}
	if o.pwSlots == 0 {
		o.pwSlots = password.DefaultSlots()
	}
	limitMemory(o.pwSlots)
	mk, err := root.masterKey()
	if err != nil {
		return err
	}
	if mk == nil {
		logger.Warn("NO MASTER KEY: signing keys are stored unencrypted in the database; set OAUTHD_MASTER_KEY or --master-key-file (e.g. `openssl rand -hex 32`) in production")
	}

	w, err := o.wire(ctx, logger, root.db, mk)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := w.closeStore(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	defer w.ln.Close()
	store, km, local, listenURL, base, app, ln := w.store, w.km, w.local, w.listenURL, w.base, w.app, w.ln

	if o.demo {
		d, err := seedDemo(ctx, local, store, base, app)
		if err != nil {
			return fmt.Errorf("seed the demo: %w", err)
		}
		printDemo(cmd.OutOrStdout(), d, demoBanner{CodeTTL: o.codeTTL, LoginURL: o.loginURL})
	}

	var srvs []*http.Server
	if w.pg == nil {
		// The admin socket first: once /readyz answers, the CLI can
		// reach the server too (a CLI call in between would find the
		// file locked and no socket). On PostgreSQL the CLI works on
		// the database directly and there is no socket.
		sockPath := root.socketPath()
		adminLn, err := admin.Listen(sockPath)
		if err != nil {
			return err
		}
		adminSrv := &http.Server{Handler: withExport(admin.Handler(local), w.bolt, logger), ReadHeaderTimeout: 10 * time.Second, ConnContext: admin.ConnContext}
		go adminSrv.Serve(adminLn)
		defer os.Remove(sockPath)
		logger.Info("admin socket ready", "path", sockPath)
		srvs = append(srvs, adminSrv)
	}
	if o.debugAddr != "" {
		dbg, dbgURL, err := listenDebug(o.debugAddr)
		if err != nil {
			return err
		}
		srvs = append(srvs, dbg)
		logger.Info("pprof listening on " + dbgURL)
	}

	srv := w.httpServer(logger)
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()
	logger.Info("oauthd listening on "+listenURL, "base_url", base, "app_url", app, "db", redactDB(root.db))

	loopCtx, stopLoops := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { km.Run(loopCtx) })
	if w.pg != nil {
		wg.Go(func() { w.follow(loopCtx, logger, postgres.ListenOptions{}) })
	}
	var throttleGC func(context.Context, time.Time) (int, error)
	if w.pg != nil {
		throttleGC = w.pg.ThrottleGC
	}
	wg.Go(func() { gcLoop(loopCtx, logger, store, throttleGC) })

	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case err = <-srvErr:
		err = fmt.Errorf("serve: %w", err)
	}
	shutdown(ctx, logger, append([]*http.Server{srv}, srvs...)...)
	stopLoops()
	wg.Wait()
	return err
}

// checkFlags checks the flags that wire would otherwise check only after
// opening (and perhaps creating) the database.
func (o *serveOptions) checkFlags() error {
	if o.refreshIdle <= 0 || o.refreshMax <= 0 {
		return fmt.Errorf("--refresh-idle %s / --refresh-max %s: use positive durations (defaults 720h and 8760h)", o.refreshIdle, o.refreshMax)
	}
	for _, f := range []struct{ name, url string }{{"--base-url", o.baseURL}, {"--app-url", o.appURL}} {
		if f.url == "" {
			continue
		}
		u, err := url.Parse(f.url)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("%s %q: use an http(s) URL without query or fragment, e.g. https://auth.example.com", f.name, f.url)
		}
	}
	if _, err := issuer.TrustedProxies(o.proxies); err != nil {
		return fmt.Errorf("--trusted-proxy %w", err)
	}
	if o.debugAddr != "" {
		if err := checkDebugAddr(o.debugAddr); err != nil {
			return err
		}
	}
	if _, _, err := net.SplitHostPort(o.addr); err != nil {
		return fmt.Errorf("--addr %q: %w; use host:port, e.g. 127.0.0.1:8080", o.addr, err)
	}
	return nil
}

// checkReuseGrace checks --refresh-reuse-grace (and its env variable,
// which, when it does not parse, is reported here rather than ignored).
func (o *serveOptions) checkReuseGrace() error {
	if v := os.Getenv("OAUTHD_REFRESH_REUSE_GRACE"); v != "" {
		if _, err := time.ParseDuration(v); err != nil {
			return fmt.Errorf("OAUTHD_REFRESH_REUSE_GRACE=%q is not a duration; use e.g. 30s, or 0 to disable the grace", v)
		}
	}
	if o.reuseGrace < 0 || o.reuseGrace > issuer.MaxRefreshReuseGrace {
		return fmt.Errorf("--refresh-reuse-grace %s: use a duration between 0 (off) and %s", o.reuseGrace, issuer.MaxRefreshReuseGrace)
	}
	if o.dpopWindow != 0 && (o.dpopWindow < 5*time.Second || o.dpopWindow > 10*time.Minute) {
		return fmt.Errorf("--dpop-window %s: use a duration between 5s and 10m", o.dpopWindow)
	}
	return nil
}

// wired is a server wired as `serve` runs it, listening but not yet
// serving: serve and bench both start from it.
type wired struct {
	bolt                 *bolt.Store     // the bbolt backend, or nil
	pg                   *postgres.Store // the PostgreSQL backend, or nil
	store                *cache.Store    // the backend with client records cached; every write of this process goes through it
	km                   *keys.Manager
	iss                  *issuer.Server
	guard                *guard.Guard
	local                *admin.Local
	throttle             *pgThrottle // on PostgreSQL: the limiters' shared failures, or nil
	e                    *echo.Echo
	ln                   net.Listener
	listenURL, base, app string
}

// wire opens the database at dbPath, loads the keys, listens on o.addr and
// builds the Echo app (docs/DESIGN.md "serve wiring"). On success the
// caller closes ln and calls closeStore.
func (o *serveOptions) wire(ctx context.Context, logger *slog.Logger, dbPath string, mk []byte) (w *wired, err error) {
	w = &wired{}
	now := o.now
	if now == nil {
		now = time.Now
	}
	var db data.Store
	if postgres.IsURL(dbPath) {
		// Replicas that start together migrate once (advisory lock).
		w.pg, err = postgres.Open(ctx, dbPath, postgres.Options{Migrate: true, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("open database %s: %w", postgres.Redact(dbPath), err)
		}
		db = w.pg
	} else {
		bolt.ReserveSyncProc() // SyncHoldsProc
		w.bolt, err = bolt.Open(dbPath, bolt.Options{Timeout: time.Second, Logger: logger, SyncHoldsProc: true})
		if errors.Is(err, bolt.ErrLocked) {
			return nil, fmt.Errorf("database %s is in use by another process (another oauthd serve?); stop it or pass another --db", dbPath)
		}
		if err != nil {
			return nil, err // bolt's errors name the file already
		}
		db = w.bolt
	}
	defer func() { // db, not w.bolt: an error return sets w to nil
		if err != nil {
			db.Close()
		}
	}()
	// One cached store for the issuer, the consent pages and the admin
	// socket: every client change of this process passes through it (on
	// PostgreSQL, other processes' changes arrive by w.follow).
	w.store = cache.New(db)
	store := w.store

	km, err := keys.New(ctx, keys.Config{Store: store, Logger: logger, MasterKey: mk, Now: now})
	if err != nil {
		return nil, err // keys.New says "load signing keys: …" and what to do
	}
	w.km = km
	if len(km.RefreshTokenKey()) == 0 {
		// Never run with a key of this process only: every refresh token
		// would look forged after a restart.
		return nil, errors.New("load signing keys: the refresh-token secret is missing from the key set; run `oauthd keys list` to check the database")
	}

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w; pass another --addr", o.addr, err)
	}
	defer func() {
		if err != nil {
			ln.Close()
		}
	}()
	w.ln = ln
	w.listenURL = "http://" + ln.Addr().String()
	base := strings.TrimSuffix(cmp(o.baseURL, w.listenURL), "/")
	app := strings.TrimSuffix(cmp(o.appURL, w.listenURL), "/")
	w.base, w.app = base, app

	v, err := verify.New(verify.Config{Issuer: base, Keys: km, Now: now})
	if err != nil {
		return nil, fmt.Errorf("verifier: %w", err)
	}
	// /v2/me checks DPoP proofs with the jti recorded in the store, like
	// the token endpoint: a proof replayed to another replica is refused.
	dp := verify.NewDPoP(verify.DPoPConfig{Window: o.dpopWindow, Nonces: store, Now: now})
	g := guard.New(guard.Config{Verifier: v, Table: guard.DefaultTable(), Logger: logger, DPoP: dp, PublicURL: base})
	w.guard = g
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if w.bolt != nil {
		registerStoreMetrics(reg, w.bolt)
	} else {
		registerPoolMetrics(reg, w.pg)
	}
	// /v2/me has its own guard, whose verifier also checks the token's
	// grant (bound to the issuer once it exists): a revoked token is 401
	// there whatever its scopes.
	me := issuer.NewGrantVerifier(v)
	meGuard := guard.New(guard.Config{Verifier: me, Table: guard.DefaultTable(), Logger: logger, DPoP: dp, PublicURL: base})
	registerTokenCacheMetrics(reg, v)
	var shared *throttle.Shared // nil on bbolt: one process counts alone
	if w.pg != nil {
		shared, w.throttle = sharedThrottle(w.pg, km.RefreshTokenKey())
	}
	iss, err := issuer.New(issuer.Config{
		Store: store, Signer: km, Verifier: v, MeAuth: meGuard.Echo(), Logger: logger, Registerer: reg,
		Issuer: base, AppURL: app, CodeTTL: o.codeTTL, RefreshIdle: o.refreshIdle, RefreshMax: o.refreshMax, Now: now,
		RefreshTokenKey: km.RefreshTokenKey(), RefreshReuseGrace: o.reuseGrace, Throttle: shared, DPoPWindow: o.dpopWindow,
	})
	if err != nil {
		return nil, fmt.Errorf("issuer: %w (check --base-url and --app-url)", err)
	}
	w.iss = iss
	me.Bind(iss)
	adminLog := logger
	if w.pg != nil {
		adminLog = slog.New(newAuditTee(logger.Handler(), w.pg))
	}
	w.local = admin.NewLocal(store, km, adminLog, now)
	ho, err := o.handover(ctx, base)
	if err != nil {
		return nil, err
	}
	pages, err := consent.New(consent.Config{Store: store, Authorizer: iss, Logger: logger, AppURL: app, Registerer: reg,
		PasswordSlots: o.pwSlots, Handover: ho, Now: now, Throttle: shared})
	if err != nil {
		return nil, fmt.Errorf("consent pages: %w", err)
	}
	devPages, err := settings.New(settings.Config{Site: pages, Clients: w.local, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("settings pages: %w", err)
	}

	ipx, err := issuer.TrustedProxies(o.proxies)
	if err != nil {
		return nil, fmt.Errorf("--trusted-proxy %w", err)
	}
	e := issuer.NewEcho(logger, reg, ipx)
	e.Use(issuer.HSTS(base, app))
	iss.Register(e)
	pages.Register(e)
	devPages.Register(e)
	e.GET("/.well-known/jwks.json", km.ServeJWKS)
	if err := registerFeed(e, store, km, base, logger); err != nil {
		return nil, err
	}
	e.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	e.GET("/readyz", km.ServeReady)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	w.e = e
	return w, nil
}

// httpServer is the HTTP server of the wired app.
// handover returns the login handover of the --login-* flags, or nil when
// none is set (the built-in login form).
func (o *serveOptions) handover(ctx context.Context, base string) (*consent.Handover, error) {
	set := 0
	for _, v := range []string{o.loginURL, o.loginIssuer, o.loginJWKS} {
		if v != "" {
			set++
		}
	}
	switch set {
	case 0:
		return nil, nil
	case 3:
	default:
		return nil, errors.New("the login handover needs all of --login-url, --login-issuer and --login-jwks (see docs/LOGIN-HANDOVER.md)")
	}
	if u, err := url.Parse(o.loginURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("--login-url %q must be an http(s) URL of the platform's login page", o.loginURL)
	}
	v, err := handover.New(ctx, handover.Config{Issuer: o.loginIssuer, Audience: base, Keys: o.loginJWKS})
	if err != nil {
		return nil, fmt.Errorf("--login-jwks: %w; check that the platform's keys are reachable", err)
	}
	return &consent.Handover{LoginURL: o.loginURL, Verifier: v}, nil
}

func (w *wired) httpServer(logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler: issuer.HeadAsGet(w.e),
		// Bounded reads and writes: a slow client cannot hold a connection
		// (and its goroutine) for ever. Bodies are at most 64 KiB.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// closeStore closes the database.
func (w *wired) closeStore() error {
	if err := w.store.Close(); err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	return nil
}

// cmp returns a unless it is empty, then b.
func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// shutdown stops accepting and finishes requests in flight, with a fresh
// 10 s deadline (ctx is usually cancelled already).
func shutdown(ctx context.Context, logger *slog.Logger, srvs ...*http.Server) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, s := range srvs {
		if err := s.Shutdown(sctx); err != nil {
			logger.Error("shutdown", "err", err)
		}
	}
}

// tuneGC sets the GC target to [issuer.GCPercent] unless the operator set
// GOGC (or GOMEMLIMIT, which then governs).
func tuneGC() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(issuer.GCPercent)
	}
}

// limitMemory sets the runtime's soft memory limit (docs/LIMITS.md, "Memory") for
// slots password check slots ([password.MemoryLimit] over
// [issuer.MemoryBase]), unless the operator set GOMEMLIMIT.
func limitMemory(slots int) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(password.MemoryLimit(issuer.MemoryBase, slots))
	}
}

// listenDebug serves net/http/pprof on addr, which must be a loopback
// address: profiles show the code's hot paths and must not be public.
func listenDebug(addr string) (*http.Server, string, error) {
	if err := checkDebugAddr(addr); err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("--debug-addr: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return srv, "http://" + ln.Addr().String() + "/debug/pprof/", nil
}

// checkDebugAddr checks that addr is a loopback host:port.
func checkDebugAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--debug-addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--debug-addr %q: use a loopback address such as 127.0.0.1:6060 (profiles must not be public)", addr)
	}
	return nil
}

// gcLoop removes expired codes, refresh-token families and sessions every
// minute until ctx is done, and on PostgreSQL (throttleGC not nil) the
// shared failure counters that lapsed.
func gcLoop(ctx context.Context, logger *slog.Logger, store data.Store, throttleGC func(context.Context, time.Time) (int, error)) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if throttleGC != nil {
			if _, err := throttleGC(ctx, time.Now()); err != nil && ctx.Err() == nil {
				logger.ErrorContext(ctx, "garbage collection of the failure counters", "err", err)
			}
		}
		res, err := store.GarbageCollect(ctx, time.Now())
		if err != nil {
			if ctx.Err() == nil {
				logger.ErrorContext(ctx, "garbage collection", "err", err)
			}
			continue
		}
		if res.AuthCodes+res.Families+res.Sessions+res.Nonces > 0 {
			logger.InfoContext(ctx, "garbage collection", "auth_codes", res.AuthCodes, "families", res.Families, "sessions", res.Sessions, "nonces", res.Nonces)
		}
	}
}

// registerStoreMetrics exports the group committer's counters: the mean
// batch is ops/commits, the mean commit latency seconds/commits.
func registerStoreMetrics(reg prometheus.Registerer, db *bolt.Store) {
	counter := func(name, help string, f func(bolt.CommitStats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return f(db.CommitStats()) })
	}
	reg.MustRegister(
		counter("oauthd_store_commits_total", "Batches of writes run by the group committer.",
			func(s bolt.CommitStats) float64 { return float64(s.Commits) }),
		counter("oauthd_store_committed_writes_total", "Writes carried by those batches.",
			func(s bolt.CommitStats) float64 { return float64(s.Ops) }),
		counter("oauthd_store_commit_seconds_total", "Time from the start of those batches to their answers, fsyncs included.",
			func(s bolt.CommitStats) float64 { return s.Time.Seconds() }),
		counter("oauthd_store_wal_syncs_total", "fdatasyncs of the write-ahead log.",
			func(s bolt.CommitStats) float64 { return float64(s.Syncs) }),
		counter("oauthd_store_wal_sync_seconds_total", "Time spent in them.",
			func(s bolt.CommitStats) float64 { return s.SyncTime.Seconds() }),
		counter("oauthd_store_wal_syncs_released_total", "fdatasyncs that released their Go processor because the one before took 2ms or more (a slow disk, or a saturated CPU late to wake the syncer).",
			func(s bolt.CommitStats) float64 { return float64(s.ReleasedSyncs) }),
		counter("oauthd_store_checkpoints_total", "Copies of the write-ahead log into the database file.",
			func(s bolt.CommitStats) float64 { return float64(s.Checkpoints) }),
		counter("oauthd_store_checkpoint_seconds_total", "Time spent in them; the group committer answers no write meanwhile.",
			func(s bolt.CommitStats) float64 { return s.CheckpointTime.Seconds() }),
	)
}
