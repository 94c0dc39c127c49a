package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"oauthd/cmd/internal/backend"
	"oauthd/consent"
	"oauthd/consent/handover"
	"oauthd/consent/settings"
	"oauthd/data/cache"
	"oauthd/issuer"
	"oauthd/issuer/admin"
	"oauthd/issuer/throttle"
	"oauthd/keys"
	"oauthd/keys/guard"
	"oauthd/keys/verify"
)

// wired is a server wired as `serve` runs it, listening but not yet
// serving: serve and bench both start from it.
type wired struct {
	db                   *backend.Database // the opened --db
	store                *cache.Store      // the backend with client records cached; every write of this process goes through it
	km                   *keys.Manager
	iss                  *issuer.Server
	guard                *guard.Guard
	local                *admin.Local
	throttle             *throttle.RowStore // on a shared database: the limiters' shared failures, or nil
	outage               *issuer.Outage     // database outages: 503s, logged when they start and end
	e                    *echo.Echo
	ln                   net.Listener
	adminLn              net.Listener // the admin socket's (o.adminSocket), or nil
	listenURL, base, app string
}

// wire listens on o.addr, opens the database at dbPath, loads the keys and
// builds the Echo app (docs/DESIGN.md "serve wiring"); o is checked. On
// success the caller closes ln and calls closeStore.
func (o *serveOptions) wire(ctx context.Context, logger *slog.Logger, dbPath string, mk []byte) (w *wired, err error) {
	if o.ipx == nil {
		return nil, errors.New("serve: the settings were not checked (serveOptions.check)")
	}
	w = &wired{}
	now := o.now
	if now == nil {
		now = time.Now
	}
	// The port first: a port in use must not leave a new database behind.
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w; stop what listens there or pass another --addr", o.addr, err)
	}
	defer func() {
		if err != nil {
			ln.Close()
		}
	}()
	w.ln = ln
	w.listenURL = "http://" + ln.Addr().String()
	base := strings.TrimSuffix(cmp.Or(o.baseURL, w.listenURL), "/")
	app := strings.TrimSuffix(cmp.Or(o.appURL, w.listenURL), "/")
	w.base, w.app = base, app

	// Everything else that can refuse the start before the database is
	// opened, which may create or upgrade it: a refused start leaves it
	// as it was (TestRefusedStartChangesNothing).
	ho, err := o.handover(ctx, base)
	if err != nil {
		return nil, err
	}
	if o.adminSocket != "" {
		// The admin socket: another serve answering there, or a path too
		// long, refuses here.
		adminLn, lerr := admin.Listen(o.adminSocket)
		if lerr != nil {
			return nil, lerr
		}
		w.adminLn = adminLn
		defer func() {
			if err != nil { // wire's result
				adminLn.Close()
				os.Remove(o.adminSocket)
			}
		}()
	}
	in, err := backend.Inspect(ctx, dbPath)
	if err != nil {
		return nil, err
	}
	if err := keys.CheckMasterKey(in.Keys, mk); err != nil {
		return nil, err
	}

	db, err := backend.OpenWith(ctx, dbPath, backend.ForServe, logger, backend.Options{SessionURL: o.dbSession})
	if err != nil {
		return nil, err
	}
	w.db = db
	defer func() {
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
	reg.MustRegister(db.Collectors...)
	// Audit records are counted by event (refusals of anonymous callers
	// included), whatever the log level.
	logger = slog.New(admin.NewAuditCounter(logger.Handler(), reg))
	// While the database cannot be reached, every endpoint that needs it
	// answers 503; the outage is logged when it starts and, once
	// readiness (the key store) answers again, when it ends.
	w.outage = issuer.NewOutage(issuer.OutageConfig{Logger: logger, Probe: km.Ready, Registerer: reg})
	// /v2/me has its own guard, whose verifier also checks the token's
	// grant (bound to the issuer once it exists): a revoked token is 401
	// there whatever its scopes.
	me := issuer.NewGrantVerifier(v)
	meGuard := guard.New(guard.Config{Verifier: me, Table: guard.DefaultTable(), Logger: logger, DPoP: dp, PublicURL: base})
	uiGuard := guard.New(guard.Config{Verifier: me, Table: issuer.UserinfoTable(), Logger: logger, DPoP: dp, PublicURL: base})
	registerTokenCacheMetrics(reg, v)
	var shared *throttle.Shared // nil: one process counts alone
	if db.Throttle != nil {
		shared, w.throttle = sharedThrottle(db.Throttle, km.RefreshTokenKey())
	}
	iss, err := issuer.New(issuer.Config{
		Store: store, Signer: km, Verifier: v, MeAuth: meGuard.Echo(), UserinfoAuth: uiGuard.Echo(), Logger: logger, Registerer: reg,
		Issuer: base, AppURL: app, CodeTTL: o.codeTTL, RefreshIdle: o.refreshIdle, RefreshMax: o.refreshMax, Now: now,
		RefreshTokenKey: km.RefreshTokenKey(), RefreshReuseGrace: o.reuseGrace, Throttle: shared, DPoPWindow: o.dpopWindow,
		Outage: w.outage, Resources: o.resources, MetadataPrivateNetworks: o.metaPrivate,
		MetadataMinTTL: o.metaMinTTL, MetadataMaxTTL: o.metaMaxTTL,
	})
	if err != nil {
		return nil, fmt.Errorf("issuer: %w (check --base-url and --app-url)", err)
	}
	w.iss = iss
	me.Bind(iss)
	adminLog := logger
	if db.Audit != nil {
		adminLog = slog.New(admin.TeeAudit(logger.Handler(), db.Audit))
	}
	w.local = admin.NewLocal(store, km, adminLog, now)
	pages, err := consent.New(consent.Config{Store: store, Authorizer: iss, Logger: logger, AppURL: app, Registerer: reg,
		PasswordSlots: o.pwSlots, Handover: ho, Now: now, Throttle: shared, Outage: w.outage})
	if err != nil {
		return nil, fmt.Errorf("consent pages: %w", err)
	}
	devPages, err := settings.New(settings.Config{Site: pages, Clients: w.local, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("settings pages: %w", err)
	}

	e := issuer.NewEcho(logger, reg, o.ipx, w.outage)
	if o.trace.enabled() {
		e.Use(spanRoute)
	}
	e.Use(issuer.HSTS(base, app))
	iss.Register(e)
	pages.Register(e)
	devPages.Register(e)
	e.GET("/.well-known/jwks.json", km.ServeJWKS)
	if err := registerFeed(e, store, km, base, logger, w.outage); err != nil {
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

// handover returns the login handover of the --login-* flags (checked),
// or nil when none is set (the built-in login form).
func (o *serveOptions) handover(ctx context.Context, base string) (*consent.Handover, error) {
	if o.loginURL == "" {
		return nil, nil
	}
	v, err := handover.New(ctx, handover.Config{Issuer: o.loginIssuer, Audience: base, Keys: o.loginJWKS, MaxAge: o.loginJWKSMaxAge})
	if err != nil {
		return nil, fmt.Errorf("--login-jwks: %w; check that the platform's keys are reachable", err)
	}
	return &consent.Handover{LoginURL: o.loginURL, Verifier: v, BaseURL: base}, nil
}

// httpServer is the HTTP server of the wired app.
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
