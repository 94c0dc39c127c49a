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

	"oauthd/cmd/internal/backend"
	"oauthd/consent"
	"oauthd/consent/handover"
	"oauthd/data/cache"
	"oauthd/issuer"
	"oauthd/issuer/admin"
	"oauthd/issuer/throttle"
	"oauthd/keys"
	"oauthd/keys/guard"
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
// success the caller closes Ln and calls CloseStore; on failure nothing
// stays open.
func (o *ServeOptions) Wire(ctx context.Context, logger *slog.Logger, dbPath string, mk []byte) (_ *Wired, err error) {
	if o.ipx == nil {
		return nil, errors.New("serve: the settings were not checked (ServeOptions.Check)")
	}
	w := &Wired{}
	defer func() {
		if err != nil {
			w.release(o.AdminSocket)
		}
	}()
	// The port first: a port in use must not leave a new database behind.
	if err := w.listen(o); err != nil {
		return nil, err
	}
	// Everything else that can refuse the start before the database is
	// opened, which may create or upgrade it: a refused start leaves it
	// as it was (TestRefusedStartChangesNothing).
	ho, err := o.handover(ctx, w.Base)
	if err != nil {
		return nil, err
	}
	if o.AdminSocket != "" {
		// The admin socket: another serve answering there, or a path too
		// long, refuses here.
		adminLn, err := admin.Listen(o.AdminSocket)
		if err != nil {
			return nil, err
		}
		w.AdminLn = adminLn
	}
	if err := w.open(ctx, logger, dbPath, mk, o.DBSession); err != nil {
		return nil, err
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	if err := w.loadKeys(ctx, logger, mk, now); err != nil {
		return nil, err
	}
	if err := w.app(o, logger, ho, now); err != nil {
		return nil, err
	}
	return w, nil
}

// listen listens on o.Addr and sets the URLs: the listener's, and the
// issuer's and the pages' (--base-url, --app-url, by default the
// listener's).
func (w *Wired) listen(o *ServeOptions) error {
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w; stop what listens there or pass another --addr", o.Addr, err)
	}
	w.Ln = ln
	w.ListenURL = "http://" + ln.Addr().String()
	w.Base = strings.TrimSuffix(cmp.Or(o.BaseURL, w.ListenURL), "/")
	w.App = strings.TrimSuffix(cmp.Or(o.AppURL, w.ListenURL), "/")
	return nil
}

// open checks the database at dbPath without writing (its schema, its
// signing keys against the master key mk), then opens it for serving
// (which may create or upgrade it) with one cached store over it: every
// client change of this process passes through that store (on
// PostgreSQL, other processes' changes arrive by Follow).
func (w *Wired) open(ctx context.Context, logger *slog.Logger, dbPath string, mk []byte, session string) error {
	in, err := backend.Inspect(ctx, dbPath)
	if err != nil {
		return err
	}
	if err := keys.CheckMasterKey(in.Keys, mk); err != nil {
		return err
	}
	db, err := backend.OpenWith(ctx, dbPath, backend.ForServe, logger, backend.Options{SessionURL: session})
	if err != nil {
		return err
	}
	w.DB = db
	w.Store = cache.New(db)
	return nil
}

// loadKeys loads the signing keys (creating the first ones in a new
// database).
func (w *Wired) loadKeys(ctx context.Context, logger *slog.Logger, mk []byte, now func() time.Time) error {
	km, err := keys.New(ctx, keys.Config{Store: w.Store, Logger: logger, MasterKey: mk, Now: now})
	if err != nil {
		return err // keys.New says "load signing keys: …" and what to do
	}
	w.KM = km
	if len(km.RefreshTokenKey()) == 0 {
		// Never run with a key of this process only: every refresh token
		// would look forged after a restart.
		return errors.New("load signing keys: the refresh-token secret is missing from the key set; run `oauthd keys list` to check the database")
	}
	return nil
}

// release closes what a failed Wire opened, last first: the database, the
// admin socket (and its file), the port.
func (w *Wired) release(adminSocket string) {
	if w.DB != nil {
		w.DB.Close()
	}
	if w.AdminLn != nil {
		w.AdminLn.Close()
		os.Remove(adminSocket)
	}
	if w.Ln != nil {
		w.Ln.Close()
	}
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
