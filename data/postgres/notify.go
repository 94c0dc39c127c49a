package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// Channel is the LISTEN/NOTIFY channel on which every change that other
// processes may cache is announced, in the transaction that makes it (so a
// notification arrives only after the change is visible). Payloads are
// "client ID", "keys", "grant USER_ID CLIENT_ID" and "throttle HEXKEY
// STATE" (a failure counted, [Store.ThrottleFail]). Families are not
// announced: no process caches a family's fate (famCache is a guess the
// database checks), and a NOTIFY serializes the commits that send one.
const Channel = "oauthd_changes"

// notify queues a notification that PostgreSQL delivers when tx commits.
func notify(ctx context.Context, tx pgx.Tx, payload string) error {
	_, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", Channel, payload)
	return err
}

// Event is a change announced on [Channel].
type Event struct {
	// Kind is "client", "keys", "grant" or "throttle"; "" for a reset.
	Kind string
	// ID names the record: a client ID, "USER_ID CLIENT_ID" for a grant,
	// "" for keys, "HEXKEY STATE" for throttle ([ParseThrottleEvent]).
	ID string
	// Reset: notifications may have been missed (the listener has just
	// connected or reconnected, or the periodic resync is due): re-read
	// everything cached.
	Reset bool
}

func parseEvent(payload string) Event {
	kind, id, _ := strings.Cut(payload, " ")
	return Event{Kind: kind, ID: id}
}

// ListenOptions tune [Store.Listen]; zero values take the defaults.
type ListenOptions struct {
	// Resync is the safety net: a Reset event every Resync (default 30s),
	// in case a notification was lost in a way the connection did not
	// show.
	Resync time.Duration
	// Probe is how long the connection may stay silent before it is
	// checked with a query (default 5s); a connection that does not answer
	// within Probe is dropped and a new one made.
	Probe time.Duration
}

// ErrNoSession: a notification sent through the pool did not reach the
// LISTEN connection, which therefore does not keep its session: a
// transaction pooler (PgBouncer's pool_mode=transaction) is in the way.
var ErrNoSession = errors.New("the LISTEN connection does not keep its session")

// noSessionHint is what the operator does about [ErrNoSession].
const noSessionHint = "is it a transaction pool (PgBouncer's pool_mode=transaction)? " +
	"Set --db-session-url (OAUTHD_DB_SESSION_URL) to a URL that reaches PostgreSQL directly or through a session-mode pool, " +
	"and keep --db on the pool with default_query_exec_mode=exec (docs/POSTGRESQL.md \"Behind PgBouncer\")"

// startListening connects with cfg, proves that the connection keeps its
// session, and only then listens on [Channel]. The proof: a notification
// on a private channel, sent through the pool (the way every change is
// announced), must arrive within wait. Behind a transaction pooler the
// LISTEN stays on a server connection that goes back to the pooler's pool,
// and the notification never reaches this connection: [ErrNoSession].
// The LISTEN on [Channel] never goes there; the probe's is undone (UNLISTEN
// *, which the pooler hands to the server connection it just used, the
// most recent) before the connection is closed, so that a refused start
// leaves no listener on a pooled connection.
func (s *Store) startListening(ctx context.Context, cfg *pgx.ConnConfig, wait time.Duration) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.ConnectConfig(cctx, cfg)
	cancel()
	if err != nil {
		return nil, err
	}
	var nonce [8]byte
	rand.Read(nonce[:])
	probe := "oauthd_probe_" + hex.EncodeToString(nonce[:])
	err = func() error {
		if _, err := conn.Exec(ctx, "LISTEN "+probe); err != nil {
			return err
		}
		if _, err := s.pool.Exec(ctx, "SELECT pg_notify($1, '')", probe); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		for {
			n, err := conn.WaitForNotification(wctx)
			switch {
			case err != nil && ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)):
				return fmt.Errorf("%w: a notification sent through the pool did not arrive within %s on the LISTEN connection to %s; %s",
					ErrNoSession, wait, redactConn(cfg), noSessionHint)
			case err != nil:
				return err
			case n.Channel == probe:
				// A session: what changes from now on arrives (the caller's
				// Reset re-reads what changed before).
				_, err := conn.Exec(ctx, "UNLISTEN "+probe+"; LISTEN "+Channel)
				return err
			}
		}
	}()
	if err != nil {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		_, _ = conn.Exec(uctx, "UNLISTEN *") // best effort: the connection may be broken
		cancel()
		conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return conn, nil
}

// redactConn names the server of cfg for a message (no password).
func redactConn(cfg *pgx.ConnConfig) string {
	return fmt.Sprintf("database %q on %s port %d", cfg.Database, cfg.Host, cfg.Port)
}

// CheckSession checks, once, that the LISTEN connection keeps its session
// (see [ErrNoSession]); serve calls it at startup so that a transaction
// pooler in the way is refused with what to set instead of notifications
// silently lost.
func (s *Store) CheckSession(ctx context.Context) error {
	if err := s.begin(ctx, "check the LISTEN connection"); err != nil {
		return err
	}
	conn, err := s.startListening(ctx, s.listenConfig(), 10*time.Second)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// Listen calls fn with every change announced on [Channel], on one
// goroutine, until ctx is done. It first calls fn with a Reset once it
// listens (so that nothing changed between the caller's first load and the
// LISTEN is missed), again after every reconnection (a network cut or a
// database restart loses notifications), and every Resync. A lost
// connection is retried with backoff (at most 2s apart).
func (s *Store) Listen(ctx context.Context, opts ListenOptions, fn func(context.Context, Event)) {
	if opts.Resync <= 0 {
		opts.Resync = 30 * time.Second
	}
	if opts.Probe <= 0 {
		opts.Probe = 5 * time.Second
	}
	cfg := s.listenConfig()
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, cfg, opts, fn)
		if ctx.Err() != nil {
			return
		}
		s.stats.reconnects.Add(1)
		s.log.WarnContext(ctx, "database change listener lost its connection; reconnecting", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// ListenerName is the application_name of the LISTEN connection (unless
// the URL names the application).
const ListenerName = "oauthd listener"

// listenConfig is the configuration of a LISTEN connection: the session
// URL's (Options.SessionURL), else the pool's. A context deadline only
// interrupts the read (no cancel request is sent to the server), so that
// waiting with a timeout keeps the connection.
func (s *Store) listenConfig() *pgx.ConnConfig {
	cfg := s.listen.Copy()
	if cfg.RuntimeParams["application_name"] == "oauthd" {
		cfg.RuntimeParams["application_name"] = ListenerName // in pg_stat_activity
	}
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}
	}
	return cfg
}

func (s *Store) listenOnce(ctx context.Context, cfg *pgx.ConnConfig, opts ListenOptions, fn func(context.Context, Event)) error {
	conn, err := s.startListening(ctx, cfg, max(opts.Probe, 10*time.Second))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	s.stats.resets.Add(1)
	fn(ctx, Event{Reset: true})
	resync := time.Now().Add(opts.Resync)
	for {
		wctx, cancel := context.WithTimeout(ctx, max(0, min(opts.Probe, time.Until(resync))))
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if n != nil {
			s.stats.notifications.Add(1)
			fn(ctx, parseEvent(n.Payload))
		}
		if time.Now().After(resync) {
			s.stats.resets.Add(1)
			fn(ctx, Event{Reset: true})
			resync = time.Now().Add(opts.Resync)
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
			return err
		}
		// Silent for a while: make sure the connection still answers
		// (notifications that arrive meanwhile are kept by conn).
		pctx, cancel := context.WithTimeout(ctx, opts.Probe)
		_, err = conn.Exec(pctx, "SELECT 1")
		cancel()
		if err != nil {
			return err
		}
	}
}
