package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel"

	"oauthd/data"
)

// ErrClosed is returned by every method called after [Store.Close].
var ErrClosed = errors.New("postgres store is closed")

var _ data.Store = (*Store)(nil)

// IsURL reports whether s names a PostgreSQL database (postgres:// or
// postgresql://) rather than a file.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Redact returns url with its passwords hidden (the user info's, and the
// password and sslpassword parameters), for messages and logs.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the PostgreSQL URL"
	}
	// A password may also be a parameter (libpq and pgx read
	// ?password= and, for an encrypted client key, ?sslpassword=).
	parts := strings.Split(u.RawQuery, "&")
	for i, p := range parts {
		k, _, _ := strings.Cut(p, "=")
		if k, err := url.QueryUnescape(k); err != nil || strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword") {
			parts[i] = k + "=xxxxx"
			if err != nil {
				parts[i] = "xxxxx"
			}
		}
	}
	u.RawQuery = strings.Join(parts, "&")
	return u.Redacted()
}

// Options configure [Open].
type Options struct {
	// Migrate applies pending migrations before opening (see [Migrate]).
	// Without it, a database whose schema is not exactly this build's is
	// refused.
	Migrate bool
	// CheckSession runs [Store.CheckSession] before migrating: a
	// transaction pool in the way of the LISTEN connection is refused
	// with the database as it was.
	CheckSession bool
	// MaxConns bounds the pool; 0 means the URL's pool_max_conns, else
	// max(16, 4 × GOMAXPROCS).
	MaxConns int32
	// Logger, default discard.
	Logger *slog.Logger
	// SessionURL is where the one connection that needs a session goes:
	// [Store.Listen]'s LISTEN, which a transaction pooler (PgBouncer's
	// pool_mode=transaction) in front of url does not keep. Empty: url
	// itself. See docs/POSTGRESQL.md "Behind PgBouncer" and
	// [CheckPooledURL].
	SessionURL string
	// Tracer, if set, traces every statement of the pool (tests count
	// round trips with it).
	Tracer pgx.QueryTracer
}

// tracer names the spans of the store's operations on the request's path
// ("postgres rotate refresh token"), each the parent of its statements'
// spans (otelpgx).
var tracer = otel.Tracer("oauthd/data/postgres")

// Store is a [data.Store] on PostgreSQL. It is safe for concurrent use.
type Store struct {
	pool   pool // *pgxpool.Pool, its errors classified (unavailable.go)
	url    string
	log    *slog.Logger
	closed atomic.Bool
	stop   context.CancelFunc // stops the listener
	listen *pgx.ConnConfig    // the LISTEN connection's: Options.SessionURL's, else the pool's
	fams   famCache           // a guess of each family's version, see famCache
	rot    rotBatcher         // concurrent rotations' writes, grouped (rotbatch.go)
	stats  struct {
		retries, casLost, reconnects, notifications, resets atomic.Int64
	}
}

// Stats counts what the store did to keep its rules under concurrency,
// for metrics.
type Stats struct {
	// Retries of a transaction after a serialization failure or deadlock.
	Retries int64
	// CASLost counts rotations and exchanges whose conditional write lost
	// to a concurrent one (or to a stale guess) and read again.
	CASLost int64
	// Reconnects of the change listener; Notifications it delivered;
	// Resets (connects, reconnects and periodic resyncs).
	Reconnects, Notifications, Resets int64
}

// Stats returns the counters since Open.
func (s *Store) Stats() Stats {
	return Stats{
		Retries: s.stats.retries.Load(), CASLost: s.stats.casLost.Load(),
		Reconnects: s.stats.reconnects.Load(), Notifications: s.stats.notifications.Load(), Resets: s.stats.resets.Load(),
	}
}

func parseConfig(raw string, opts Options) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("parse the database URL %s: %w", Redact(raw), err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	} else if !strings.Contains(raw, "pool_max_conns") {
		cfg.MaxConns = int32(max(16, 4*runtime.GOMAXPROCS(0)))
	}
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = opts.Tracer
	} else {
		// A span per statement (and pool acquire) under the request's
		// span, when traces are on; never the statement's arguments.
		cfg.ConnConfig.Tracer = otelpgx.NewTracer()
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "oauthd"
	}
	// Every statement the store sends is one of a few fixed ones: prepare
	// each once per connection, unless the URL says otherwise (behind
	// PgBouncer's transaction pooling, default_query_exec_mode=exec or
	// simple_protocol: a prepared statement does not outlive the
	// transaction's server connection there).
	if !urlSets(raw, "connect_timeout") {
		// A database host that does not answer at all (a network
		// partition) must not hold requests for the kernel's TCP
		// timeout: give up and answer 503.
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	if !urlSets(raw, "default_query_exec_mode") {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	}
	return cfg, nil
}

// defaultConnectTimeout bounds a connection attempt unless the URL sets
// connect_timeout.
const defaultConnectTimeout = 5 * time.Second

// urlSets reports whether the connection string raw (a postgres:// URL or
// libpq's key=value form) sets the parameter key.
func urlSets(raw, key string) bool {
	if strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://") {
		u, err := url.Parse(raw)
		return err == nil && u.Query().Has(key)
	}
	for _, f := range strings.Fields(raw) {
		if k, _, _ := strings.Cut(f, "="); k == key {
			return true
		}
	}
	return false
}

// CheckPooledURL checks a --db URL (db) and its --db-session-url
// (session) before anything is opened. A session URL says that db is a
// transaction pool (PgBouncer's pool_mode=transaction), which does not keep
// a prepared statement across transactions unless it is PgBouncer ≥ 1.21
// with max_prepared_statements: db must then say how statements are sent,
// with default_query_exec_mode (exec works with every pooler).
func CheckPooledURL(db, session string) error {
	if session == "" {
		return nil
	}
	if !IsURL(session) || !IsURL(db) {
		return fmt.Errorf("--db-session-url %s: a session URL goes with a PostgreSQL --db behind a transaction pool; both must be postgres:// URLs (docs/POSTGRESQL.md \"Behind PgBouncer\")", Redact(session))
	}
	if _, err := pgx.ParseConfig(session); err != nil {
		return fmt.Errorf("--db-session-url %s: %w", Redact(session), err)
	}
	if !urlSets(db, "default_query_exec_mode") {
		return fmt.Errorf("--db %s goes through a transaction pool (--db-session-url is set): add default_query_exec_mode=exec to it "+
			"(or cache_statement on PgBouncer 1.21 or later with max_prepared_statements set); docs/POSTGRESQL.md \"Behind PgBouncer\"", Redact(db))
	}
	return nil
}

// Open connects to the database at url (a postgres:// or postgresql://
// URL; libpq's environment variables such as PGPASSWORD and PGSSLMODE
// apply) and checks its schema, or migrates it with Options.Migrate.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := parseConfig(url, opts)
	if err != nil {
		return nil, err
	}
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	listen := cfg.ConnConfig.Copy()
	if opts.SessionURL != "" {
		scfg, err := parseConfig(opts.SessionURL, Options{})
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("the session URL: %w", err)
		}
		listen = scfg.ConnConfig
	}
	s := &Store{pool: pool{p}, url: url, listen: listen, log: opts.Logger, stop: func() {}}
	if opts.CheckSession {
		if err := s.CheckSession(ctx); err != nil {
			p.Close()
			return nil, err
		}
	}
	if opts.Migrate {
		if _, _, err := Migrate(ctx, url, opts.Logger); err != nil {
			p.Close()
			return nil, err
		}
	}
	if err := checkSchema(ctx, p); err != nil {
		p.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the pool; later calls fail with [ErrClosed]. It may be
// called more than once.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.stop()
	s.pool.Close()
	return nil
}

// Ping checks that the database answers (for /readyz).
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return fmt.Errorf("%w: %w", data.ErrUnavailable, ErrClosed)
	}
	return s.pool.Ping(ctx)
}

// Pool returns the connection pool (for tools and tests on the same
// database).
func (s *Store) Pool() *pgxpool.Pool { return s.pool.Pool }

// querier is what a pool, a connection and a transaction share.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// begin checks ctx and the closed flag.
func (s *Store) begin(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if s.closed.Load() {
		return fmt.Errorf("%s: %w: %w", op, data.ErrUnavailable, ErrClosed)
	}
	return nil
}

// maxAttempts bounds the retries of a serialization failure or deadlock,
// and of a compare-and-swap that lost to a concurrent write.
const maxAttempts = 50

// retryable reports a failure after which the same transaction may simply
// be run again: a serialization failure or a deadlock.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// backoff sleeps a little, more after each attempt, with jitter.
func backoff(ctx context.Context, attempt int) error {
	d := time.Duration(rand.Int64N(int64(time.Millisecond)<<min(attempt, 6))) + 100*time.Microsecond
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retry runs fn until it succeeds, fails with an error that is not
// retryable, or has been tried maxAttempts times.
func retry(ctx context.Context, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !retryable(err) || attempt >= maxAttempts {
			return err
		}
		if err := backoff(ctx, attempt); err != nil {
			return err
		}
	}
}

// tx runs fn in a read-committed transaction, retried on serialization
// failures and deadlocks.
func (s *Store) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return retry(ctx, func() error {
		err := pgx.BeginFunc(ctx, s.pool, fn)
		if retryable(err) {
			s.stats.retries.Add(1)
		}
		return classify(err)
	})
}

// isUnique reports a unique violation, optionally of the named constraint.
func isUnique(err error, constraint string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && (constraint == "" || pe.ConstraintName == constraint)
}

func isUndefinedTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}

// Records are stored as JSON.

// encode returns the JSON of [data.Normalize](v) as a json.RawMessage,
// which pgx sends as JSON in every query mode: a plain []byte would go as
// bytea where pgx does not describe the statement
// (default_query_exec_mode=exec or simple_protocol), and the jsonb columns
// would refuse it.
//
// Every field of a record, every time included, is in the jsonb body; the
// other columns (ids, status, used, expires_ns, gc_ns, issued_ns) are
// copies for keys, indexes and the collector. Only auth_codes.used is read
// back into a record (over the body's used).
func encode[T data.Record](v T) json.RawMessage {
	b, err := json.Marshal(data.Normalize(v))
	if err != nil {
		// The data types hold only strings, numbers, bools, byte
		// slices and times in years 0–9999 (enforced by unixNano's
		// users); nothing else can fail.
		panic(fmt.Sprintf("postgres: encode %T: %v", v, err))
	}
	return b
}

// decode reads a record, through [data.Normalize]: rows written before
// encode normalized records may hold times in other zones.
func decode[T data.Record](b []byte) (T, error) {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("decode %T: %w", v, err)
	}
	return data.Normalize(v), nil
}

// unixNano is t in Unix nanoseconds, clamped to int64 (a zero time is the
// smallest value: it has expired).
func unixNano(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// familyExpiry is when GC may remove f: the earlier of its idle expiry and
// its absolute expiry (zero: none).
func familyExpiry(f data.Family) int64 {
	e := unixNano(f.ExpiresAt)
	if !f.AbsoluteExp.IsZero() {
		e = min(e, unixNano(f.AbsoluteExp))
	}
	return e
}

// queryOne reads one record's body; ErrNotFound when there is none.
func queryOne[T data.Record](ctx context.Context, q querier, sql string, args ...any) (T, error) {
	var b []byte
	if err := q.QueryRow(ctx, sql, args...).Scan(&b); err != nil {
		var zero T
		if errors.Is(err, pgx.ErrNoRows) {
			return zero, data.ErrNotFound
		}
		return zero, err
	}
	return decode[T](b)
}

// queryAll reads the bodies of every row.
func queryAll[T data.Record](ctx context.Context, q querier, sql string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	out := []T{}
	var b []byte
	_, err = pgx.ForEachRow(rows, []any{&b}, func() error {
		v, err := decode[T](b)
		out = append(out, v)
		return err
	})
	return out, err
}

// Users.

// Clients.

// Authorization codes.

// Refresh-token families.

// Consent grants.

// Sessions.

// Signing keys.
