package wiring

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"oauthd/consent"
	"oauthd/consent/settings"
	"oauthd/issuer"
	"oauthd/issuer/admin"
	"oauthd/issuer/throttle"
	"oauthd/keys/guard"
	"oauthd/keys/verify"
)

// app builds, on the opened store and the loaded keys, the verifiers and
// guards, the issuer, the pages and the Echo app with every route.
func (w *Wired) app(o *ServeOptions, logger *slog.Logger, ho *consent.Handover, now func() time.Time) error {
	v, err := verify.New(verify.Config{Issuer: w.Base, Keys: w.KM, Now: now})
	if err != nil {
		return fmt.Errorf("verifier: %w", err)
	}
	// /v2/me checks DPoP proofs with the jti recorded in the store, like
	// the token endpoint: a proof replayed to another replica is refused.
	dp := verify.NewDPoP(verify.DPoPConfig{Window: o.DPoPWindow, Nonces: w.Store, Now: now})
	w.Guard = guard.New(guard.Config{Verifier: v, Table: guard.DefaultTable(), Logger: logger, DPoP: dp, PublicURL: w.Base})
	reg := w.registry()
	// Audit records are counted by event (refusals of anonymous callers
	// included), whatever the log level.
	logger = slog.New(admin.NewAuditCounter(logger.Handler(), reg))
	// While the database cannot be reached, every endpoint that needs it
	// answers 503; the outage is logged when it starts and, once
	// readiness (the key store) answers again, when it ends.
	w.Outage = issuer.NewOutage(issuer.OutageConfig{Logger: logger, Probe: w.KM.Ready, Registerer: reg})
	registerTokenCacheMetrics(reg, v)
	var shared *throttle.Shared // nil: one process counts alone
	if w.DB.Throttle != nil {
		shared, w.Throttle = sharedThrottle(w.DB.Throttle, w.KM.RefreshTokenKey())
	}
	if err := w.issuer(o, logger, reg, v, dp, shared, now); err != nil {
		return err
	}
	pages, err := consent.New(consent.Config{Store: w.Store, Authorizer: w.Iss, Logger: logger, AppURL: w.App, Registerer: reg,
		PasswordSlots: o.PasswordSlots, Handover: ho, Now: now, Throttle: shared, Outage: w.Outage})
	if err != nil {
		return fmt.Errorf("consent pages: %w", err)
	}
	devPages, err := settings.New(settings.Config{Site: pages, Clients: w.Local, Logger: logger})
	if err != nil {
		return fmt.Errorf("settings pages: %w", err)
	}
	return w.routes(o, logger, reg, pages, devPages)
}

// registry is the Prometheus registry of the process: Go's and the
// process's collectors and the database's.
func (w *Wired) registry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(w.DB.Collectors...)
	return reg
}

// issuer builds the issuer, with its own guards for /v2/me and userinfo,
// and the admin service over the same store and keys.
func (w *Wired) issuer(o *ServeOptions, logger *slog.Logger, reg prometheus.Registerer, v *verify.Verifier, dp *verify.DPoP, shared *throttle.Shared, now func() time.Time) error {
	// /v2/me has its own guard, whose verifier also checks the token's
	// grant (bound to the issuer once it exists): a revoked token is 401
	// there whatever its scopes.
	me := issuer.NewGrantVerifier(v)
	meGuard := guard.New(guard.Config{Verifier: me, Table: guard.DefaultTable(), Logger: logger, DPoP: dp, PublicURL: w.Base})
	uiGuard := guard.New(guard.Config{Verifier: me, Table: issuer.UserinfoTable(), Logger: logger, DPoP: dp, PublicURL: w.Base})
	iss, err := issuer.New(issuer.Config{
		Store: w.Store, Signer: w.KM, Verifier: v, MeAuth: meGuard.Echo(), UserinfoAuth: uiGuard.Echo(), Logger: logger, Registerer: reg,
		Issuer: w.Base, AppURL: w.App, CodeTTL: o.CodeTTL, RefreshIdle: o.RefreshIdle, RefreshMax: o.RefreshMax, Now: now,
		RefreshTokenKey: w.KM.RefreshTokenKey(), RefreshReuseGrace: o.ReuseGrace, Throttle: shared, DPoPWindow: o.DPoPWindow,
		Outage: w.Outage, Resources: o.Resources, MetadataPrivateNetworks: o.MetaPrivate,
		MetadataMinTTL: o.MetaMinTTL, MetadataMaxTTL: o.MetaMaxTTL,
	})
	if err != nil {
		return fmt.Errorf("issuer: %w (check --base-url and --app-url)", err)
	}
	w.Iss = iss
	me.Bind(iss)
	adminLog := logger
	if w.DB.Audit != nil {
		adminLog = slog.New(admin.TeeAudit(logger.Handler(), w.DB.Audit))
	}
	w.Local = admin.NewLocal(w.Store, w.KM, adminLog, now)
	return nil
}

// routes builds the Echo app: the issuer's routes, the pages, the JWKS,
// the revoked-grants feed, health, readiness and metrics.
func (w *Wired) routes(o *ServeOptions, logger *slog.Logger, reg *prometheus.Registry, pages *consent.Handler, devPages *settings.Handler) error {
	e := issuer.NewEcho(logger, reg, o.ipx, w.Outage)
	if o.Trace.Enabled() {
		e.Use(spanRoute)
	}
	e.Use(issuer.HSTS(w.Base, w.App))
	w.Iss.Register(e)
	pages.Register(e)
	devPages.Register(e)
	e.GET("/.well-known/jwks.json", w.KM.ServeJWKS)
	if err := registerFeed(e, w.Store, w.KM, w.Base, logger, w.Outage); err != nil {
		return err
	}
	e.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	e.GET("/readyz", w.KM.ServeReady)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	w.Echo = e
	return nil
}
