package wiring

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

// Wired is a server wired as `serve` runs it, listening but not yet
// serving: `oauthd serve` and oauthd-bench both start from it.
type Wired struct {
	DB                   *backend.Database // the opened --db
	Store                *cache.Store      // the backend with client records cached; every write of this process goes through it
	KM                   *keys.Manager
	Iss                  *issuer.Server
	Guard                *guard.Guard
	Local                *admin.Local
	Throttle             *throttle.RowStore // on a shared database: the limiters' shared failures, or nil
	Outage               *issuer.Outage     // database outages: 503s, logged when they start and end
	Echo                 *echo.Echo
	Ln                   net.Listener
	AdminLn              net.Listener // the admin socket's (o.AdminSocket), or nil
	ListenURL, Base, App string
}

// Wire listens on o.Addr, opens the database at dbPath, loads the keys and
// builds the Echo app (docs/DESIGN.md "serve wiring"); o is checked. On
// success the caller closes Ln and calls CloseStore.
func (o *ServeOptions) Wire(ctx context.Context, logger *slog.Logger, dbPath string, mk []byte) (w *Wired, err error) {
	if o.ipx == nil {
		return nil, errors.New("serve: the settings were not checked (ServeOptions.Check)")
	}
	w = &Wired{}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	// The port first: a port in use must not leave a new database behind.
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w; stop what listens there or pass another --addr", o.Addr, err)
	}
	defer func() {
		if err != nil {
			ln.Close()
		}
	}()
	w.Ln = ln
	w.ListenURL = "http://" + ln.Addr().String()
	base := strings.TrimSuffix(cmp.Or(o.BaseURL, w.ListenURL), "/")
	app := strings.TrimSuffix(cmp.Or(o.AppURL, w.ListenURL), "/")
	w.Base, w.App = base, app

	// Everything else that can refuse the start before the database is
	// opened, which may create or upgrade it: a refused start leaves it
	// as it was (TestRefusedStartChangesNothing).
	ho, err := o.handover(ctx, base)
	if err != nil {
		return nil, err
	}
	if o.AdminSocket != "" {
		// The admin socket: another serve answering there, or a path too
		// long, refuses here.
		adminLn, lerr := admin.Listen(o.AdminSocket)
		if lerr != nil {
			return nil, lerr
		}
		w.AdminLn = adminLn
		defer func() {
			if err != nil { // Wire's result
				adminLn.Close()
				os.Remove(o.AdminSocket)
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

	db, err := backend.OpenWith(ctx, dbPath, backend.ForServe, logger, backend.Options{SessionURL: o.DBSession})
	if err != nil {
		return nil, err
	}
	w.DB = db
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	// One cached store for the issuer, the consent pages and the admin
	// socket: every client change of this process passes through it (on
	// PostgreSQL, other processes' changes arrive by w.Follow).
	w.Store = cache.New(db)
	store := w.Store

	km, err := keys.New(ctx, keys.Config{Store: store, Logger: logger, MasterKey: mk, Now: now})
	if err != nil {
		return nil, err // keys.New says "load signing keys: …" and what to do
	}
	w.KM = km
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
	dp := verify.NewDPoP(verify.DPoPConfig{Window: o.DPoPWindow, Nonces: store, Now: now})
	g := guard.New(guard.Config{Verifier: v, Table: guard.DefaultTable(), Logger: logger, DPoP: dp, PublicURL: base})
	w.Guard = g
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(db.Collectors...)
	// Audit records are counted by event (refusals of anonymous callers
	// included), whatever the log level.
	logger = slog.New(admin.NewAuditCounter(logger.Handler(), reg))
	// While the database cannot be reached, every endpoint that needs it
	// answers 503; the outage is logged when it starts and, once
	// readiness (the key store) answers again, when it ends.
	w.Outage = issuer.NewOutage(issuer.OutageConfig{Logger: logger, Probe: km.Ready, Registerer: reg})
	// /v2/me has its own guard, whose verifier also checks the token's
	// grant (bound to the issuer once it exists): a revoked token is 401
	// there whatever its scopes.
	me := issuer.NewGrantVerifier(v)
	meGuard := guard.New(guard.Config{Verifier: me, Table: guard.DefaultTable(), Logger: logger, DPoP: dp, PublicURL: base})
	uiGuard := guard.New(guard.Config{Verifier: me, Table: issuer.UserinfoTable(), Logger: logger, DPoP: dp, PublicURL: base})
	registerTokenCacheMetrics(reg, v)
	var shared *throttle.Shared // nil: one process counts alone
	if db.Throttle != nil {
		shared, w.Throttle = sharedThrottle(db.Throttle, km.RefreshTokenKey())
	}
	iss, err := issuer.New(issuer.Config{
		Store: store, Signer: km, Verifier: v, MeAuth: meGuard.Echo(), UserinfoAuth: uiGuard.Echo(), Logger: logger, Registerer: reg,
		Issuer: base, AppURL: app, CodeTTL: o.CodeTTL, RefreshIdle: o.RefreshIdle, RefreshMax: o.RefreshMax, Now: now,
		RefreshTokenKey: km.RefreshTokenKey(), RefreshReuseGrace: o.ReuseGrace, Throttle: shared, DPoPWindow: o.DPoPWindow,
		Outage: w.Outage, Resources: o.Resources, MetadataPrivateNetworks: o.MetaPrivate,
		MetadataMinTTL: o.MetaMinTTL, MetadataMaxTTL: o.MetaMaxTTL,
	})
	if err != nil {
		return nil, fmt.Errorf("issuer: %w (check --base-url and --app-url)", err)
	}
	w.Iss = iss
	me.Bind(iss)
	adminLog := logger
	if db.Audit != nil {
		adminLog = slog.New(admin.TeeAudit(logger.Handler(), db.Audit))
	}
	w.Local = admin.NewLocal(store, km, adminLog, now)
	pages, err := consent.New(consent.Config{Store: store, Authorizer: iss, Logger: logger, AppURL: app, Registerer: reg,
		PasswordSlots: o.PasswordSlots, Handover: ho, Now: now, Throttle: shared, Outage: w.Outage})
	if err != nil {
		return nil, fmt.Errorf("consent pages: %w", err)
	}
	devPages, err := settings.New(settings.Config{Site: pages, Clients: w.Local, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("settings pages: %w", err)
	}

	e := issuer.NewEcho(logger, reg, o.ipx, w.Outage)
	if o.Trace.Enabled() {
		e.Use(spanRoute)
	}
	e.Use(issuer.HSTS(base, app))
	iss.Register(e)
	pages.Register(e)
	devPages.Register(e)
	e.GET("/.well-known/jwks.json", km.ServeJWKS)
	if err := registerFeed(e, store, km, base, logger, w.Outage); err != nil {
		return nil, err
	}
	e.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	e.GET("/readyz", km.ServeReady)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	w.Echo = e
	return w, nil
}

// handover returns the login handover of the --login-* flags (checked),
// or nil when none is set (the built-in login form).
func (o *ServeOptions) handover(ctx context.Context, base string) (*consent.Handover, error) {
	if o.LoginURL == "" {
		return nil, nil
	}
	v, err := handover.New(ctx, handover.Config{Issuer: o.LoginIssuer, Audience: base, Keys: o.LoginJWKS, MaxAge: o.LoginJWKSMaxAge})
	if err != nil {
		return nil, fmt.Errorf("--login-jwks: %w; check that the platform's keys are reachable", err)
	}
	return &consent.Handover{LoginURL: o.LoginURL, Verifier: v, BaseURL: base}, nil
}

// HTTPServer is the HTTP server of the wired app.
func (w *Wired) HTTPServer(logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler: issuer.HeadAsGet(w.Echo),
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

// CloseStore closes the database.
func (w *Wired) CloseStore() error {
	if err := w.Store.Close(); err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	return nil
}
