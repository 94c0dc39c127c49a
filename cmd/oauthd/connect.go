package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/backend"
	"oauthd/data"
	"oauthd/issuer/admin"
	"oauthd/keys"
)

// connect returns the operator Service for --db: through the running
// server's admin socket when the backend has one and a server answers
// there, otherwise by opening the database (cmd/internal/backend). The returned
// close function must be called.
func (o *rootOptions) connect(cmd *cobra.Command) (admin.Service, func() error, error) {
	logger, err := o.logger(cmd, slog.LevelWarn)
	if err != nil {
		return nil, nil, err
	}
	if sock := backend.AdminSocket(o.DB); sock != "" {
		// One process owns the database: a running server answers on
		// its admin socket. On a shared database the CLI works on it
		// directly, and its changes reach the servers by notification.
		if c, err := admin.Dial(sock); err == nil {
			return c, c.Close, nil
		}
	}
	mode := backend.ForCLI
	if isReadOnly(cmd) {
		mode = backend.ForCLIRead
	}
	store, err := backend.Open(cmd.Context(), o.DB, mode, logger)
	if err != nil {
		return nil, nil, err
	}
	if store.Audit != nil {
		logger = slog.New(admin.TeeAudit(logger.Handler(), store.Audit))
	}
	lk := &lazyKeys{store: store, open: func(ctx context.Context) (*keys.Manager, error) {
		mk, err := o.MasterKey()
		if err != nil {
			return nil, err
		}
		return keys.New(ctx, keys.Config{Store: store, Logger: logger, MasterKey: mk})
	}}
	local := admin.NewLocal(store, lk, logger, time.Now).WithActor(admin.Actor{Via: "cli", UID: os.Getuid(), PID: os.Getpid()})
	return local, store.Close, nil
}

// lazyKeys builds the key manager on first use, so that commands that do not
// touch keys work without the master key.
type lazyKeys struct {
	store data.Store
	open  func(context.Context) (*keys.Manager, error)
	once  sync.Once
	m     *keys.Manager
	err   error
}

func (l *lazyKeys) get(ctx context.Context) (*keys.Manager, error) {
	l.once.Do(func() { l.m, l.err = l.open(ctx) })
	return l.m, l.err
}

// List reads the keys without a manager: keys.New would create them on
// a database that has none, and listing never writes.
func (l *lazyKeys) List(ctx context.Context) ([]keys.Info, error) {
	return keys.List(ctx, l.store)
}

func (l *lazyKeys) Rotate(ctx context.Context, alg string) (keys.RotateResult, error) {
	m, err := l.get(ctx)
	if err != nil {
		return keys.RotateResult{}, err
	}
	return m.Rotate(ctx, alg)
}

func (l *lazyKeys) Revoke(ctx context.Context, kid string) error {
	m, err := l.get(ctx)
	if err != nil {
		return err
	}
	return m.Revoke(ctx, kid)
}

// withService runs fn with the Service and closes it afterwards.
func (o *rootOptions) withService(cmd *cobra.Command, fn func(ctx context.Context, svc admin.Service) error) error {
	svc, closeFn, err := o.connect(cmd)
	if err != nil {
		return err
	}
	err = fn(cmd.Context(), svc)
	if cerr := closeFn(); cerr != nil && err == nil {
		err = fmt.Errorf("close database: %w", cerr)
	}
	return err
}
