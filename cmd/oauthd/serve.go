package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/backend"
	"oauthd/cmd/internal/wiring"
	"oauthd/data/password"
	"oauthd/issuer/admin"
)

// serveOptions are the flags of `oauthd serve` (wiring.ServeOptions).
type serveOptions struct{ wiring.ServeOptions }

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
	makeConfigurable(cmd, "serve", "OAUTHD_")
	return cmd
}

// run wires everything (docs/DESIGN.md "serve wiring"), serves until ctx is
// done, then shuts down in order.
func (o *serveOptions) run(ctx context.Context, cmd *cobra.Command, root *rootOptions) (err error) {
	// The order matters (docs/DESIGN.md "serve wiring"): the settings are
	// read and checked, the ports bound, and only then is the database
	// opened (perhaps created): a typo or a port in use leaves nothing.
	logger, mk, err := o.settle(cmd, root)
	if err != nil {
		return err
	}
	stopTracing, err := o.Trace.Start(ctx, logger)
	if err != nil {
		return err
	}
	defer stopTracing() // last: the spans of the shutdown are flushed too

	var srvs []*http.Server
	if o.DebugAddr != "" {
		dbg, dbgURL, err := listenDebug(o.DebugAddr)
		if err != nil {
			return err
		}
		defer dbg.Close() // a no-op after shutdown
		srvs = append(srvs, dbg)
		logger.Info("pprof listening on " + dbgURL)
	}
	o.AdminSocket = backend.AdminSocket(root.DB)
	w, err := o.Wire(ctx, logger, root.DB, mk) // listens on --addr and the admin socket before it opens the database
	if err != nil {
		return err
	}
	defer func() {
		if cerr := w.CloseStore(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	defer w.Ln.Close()
	if w.AdminLn != nil {
		defer os.Remove(o.AdminSocket)
		defer w.AdminLn.Close() // a no-op after shutdown
	}

	if o.Demo {
		d, err := seedDemo(ctx, w.Local, w.Store, w.Base, w.App)
		if err != nil {
			return fmt.Errorf("seed the demo: %w", err)
		}
		printDemo(cmd.OutOrStdout(), d, demoBanner{CodeTTL: o.CodeTTL, LoginURL: o.LoginURL})
	}
	if w.AdminLn != nil {
		// The admin socket first: once /readyz answers, the CLI can
		// reach the server too (a CLI call in between would find the
		// file locked and no socket). On a shared database the CLI
		// works on the database directly and there is no socket.
		srvs = append(srvs, o.serveAdmin(w, logger))
	}
	srv := w.HTTPServer(logger)
	srv.Handler = o.Trace.Handler(srv.Handler, "oauthd", o.Trusted())
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(w.Ln) }()
	logger.Info("oauthd listening on "+w.ListenURL, "base_url", w.Base, "app_url", w.App, "db", backend.Redact(root.DB))

	stopLoops := startLoops(ctx, w, logger)
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case err = <-srvErr:
		err = fmt.Errorf("serve: %w", err)
	}
	wiring.Shutdown(ctx, logger, append([]*http.Server{srv}, srvs...)...)
	stopLoops()
	return err
}

// settle reads and checks serve's settings (flags, variables, the file)
// and the master key, and sizes the password checks and the memory limit;
// it opens nothing.
func (o *serveOptions) settle(cmd *cobra.Command, root *rootOptions) (*slog.Logger, []byte, error) {
	if _, err := configure(cmd); err != nil {
		return nil, nil, err
	}
	logger, err := root.logger(cmd, slog.LevelInfo)
	if err != nil {
		return nil, nil, err
	}
	o.DB = root.DB
	if err := o.Check(); err != nil {
		return nil, nil, err
	}
	warnUnknownEnv(logger)
	mk, err := root.MasterKey()
	if err != nil {
		return nil, nil, err
	}
	if mk == nil {
		logger.Warn("NO MASTER KEY: signing keys are stored unencrypted in the database; set OAUTHD_MASTER_KEY or --master-key-file (e.g. `openssl rand -hex 32`) in production")
	}
	o.PasswordSlots = cmp.Or(o.PasswordSlots, password.DefaultSlots())
	limitMemory(o.PasswordSlots)
	return logger, mk, nil
}

// serveAdmin serves the admin Service on w's admin socket (with store copy
// --from's export while serving) and returns its server.
func (o *serveOptions) serveAdmin(w *wiring.Wired, logger *slog.Logger) *http.Server {
	var h http.Handler = admin.Handler(w.Local)
	if ex, ok := w.DB.Store.(exporter); ok {
		h = withExport(h, ex, logger) // store copy --from while serving
	}
	if o.Trace.Enabled() {
		h = wiring.TraceHandler(h, "admin", nil, true)
	}
	adminSrv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ConnContext: admin.ConnContext}
	go adminSrv.Serve(w.AdminLn)
	logger.Info("admin socket ready", "path", o.AdminSocket)
	return adminSrv
}

// startLoops runs the server's background loops until the returned stop
// is called, which waits for them: the key manager's, the outage probe,
// the change feed (on a shared database) and the garbage collection.
func startLoops(ctx context.Context, w *wiring.Wired, logger *slog.Logger) (stop func()) {
	loopCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { w.KM.Run(loopCtx) })
	wg.Go(func() { w.Outage.Run(loopCtx) })
	if w.DB.Follow != nil {
		wg.Go(func() { w.Follow(loopCtx, logger) })
	}
	wg.Go(func() { gcLoop(loopCtx, logger, w.Store, w.DB.GC) })
	return func() {
		cancel()
		wg.Wait()
	}
}
