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
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"oauthd/data"
	"oauthd/data/ident"
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

// Store is a [data.Store] on PostgreSQL. It is safe for concurrent use.
type Store struct {
	pool   pool // *pgxpool.Pool, its errors classified (unavailable.go)
	url    string
	log    *slog.Logger
	closed atomic.Bool
	stop   context.CancelFunc // stops the listener
	listen *pgx.ConnConfig    // the LISTEN connection's: Options.SessionURL's, else the pool's
	fams   famCache           // a guess of each family's version, see famCache
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
	if opts.Migrate {
		if _, _, err := Migrate(ctx, url, opts.Logger); err != nil {
			return nil, err
		}
	}
	cfg, err := parseConfig(url, opts)
	if err != nil {
		return nil, err
	}
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if err := checkSchema(ctx, p); err != nil {
		p.Close()
		return nil, err
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
	return &Store{pool: pool{p}, url: url, listen: listen, log: opts.Logger, stop: func() {}}, nil
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

// CreateUser implements [data.Store.CreateUser] as a batch of one (see
// [Store.CreateUsers]).
func (s *Store) CreateUser(ctx context.Context, u data.User) (data.User, error) {
	us, err := s.CreateUsers(ctx, []data.User{u})
	if err != nil {
		return data.User{}, err
	}
	return us[0], nil
}

// GetUser implements [data.Store.GetUser].
func (s *Store) GetUser(ctx context.Context, id int64) (data.User, error) {
	if err := s.begin(ctx, "get user"); err != nil {
		return data.User{}, err
	}
	u, err := queryOne[data.User](ctx, s.pool, "SELECT body FROM users WHERE id = $1", id)
	if err != nil {
		return data.User{}, fmt.Errorf("get user %d: %w", id, err)
	}
	return u, nil
}

// GetUserByLogin implements [data.Store.GetUserByLogin]: an email match
// comes before a username match.
func (s *Store) GetUserByLogin(ctx context.Context, login string) (data.User, error) {
	if err := s.begin(ctx, "get user by login"); err != nil {
		return data.User{}, err
	}
	l := ident.Key(login)
	if l == "" {
		return data.User{}, fmt.Errorf("get user by login: %w", data.ErrNotFound)
	}
	u, err := queryOne[data.User](ctx, s.pool,
		"SELECT body FROM users WHERE email_lower = $1 OR username_lower = $1 ORDER BY email_lower = $1 DESC LIMIT 1", l)
	if err != nil {
		return data.User{}, fmt.Errorf("get user by login: %w", err)
	}
	return u, nil
}

// ListUsers implements [data.Store.ListUsers], ordered by ID.
func (s *Store) ListUsers(ctx context.Context) ([]data.User, error) {
	if err := s.begin(ctx, "list users"); err != nil {
		return nil, err
	}
	us, err := queryAll[data.User](ctx, s.pool, "SELECT body FROM users ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return us, nil
}

// Clients.

// CreateClient implements [data.Store.CreateClient].
func (s *Store) CreateClient(ctx context.Context, c data.Client) error {
	if err := s.begin(ctx, "create client"); err != nil {
		return err
	}
	if err := data.ValidateClient(c); err != nil {
		return fmt.Errorf("create client %q: %w", c.ID, err)
	}
	tag, err := s.pool.Exec(ctx, `WITH ins AS (
		INSERT INTO clients (id, status, body) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING RETURNING id)
		SELECT pg_notify('`+Channel+`', 'client '||id) FROM ins`, c.ID, string(c.Status), encode(c))
	if err != nil {
		return fmt.Errorf("create client %q: %w", c.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("create client %q: %w", c.ID, data.ErrExists)
	}
	return nil
}

// GetClient implements [data.Store.GetClient].
func (s *Store) GetClient(ctx context.Context, id string) (data.Client, error) {
	if err := s.begin(ctx, "get client"); err != nil {
		return data.Client{}, err
	}
	c, err := queryOne[data.Client](ctx, s.pool, "SELECT body FROM clients WHERE id = $1", id)
	if err != nil {
		return data.Client{}, fmt.Errorf("get client %q: %w", id, err)
	}
	return c, nil
}

// ListClients implements [data.Store.ListClients], ordered by ID.
func (s *Store) ListClients(ctx context.Context, status data.ClientStatus) ([]data.Client, error) {
	if err := s.begin(ctx, "list clients"); err != nil {
		return nil, err
	}
	cs, err := queryAll[data.Client](ctx, s.pool, "SELECT body FROM clients WHERE $1 = '' OR status = $1 ORDER BY id", string(status))
	if err != nil {
		return nil, fmt.Errorf("list clients: %w", err)
	}
	return cs, nil
}

// UpdateClient implements [data.Store.UpdateClient]: the client's row is
// locked from the read to the commit, so concurrent updates from any
// process apply one after another, each to the record the previous one
// committed, and the rules are checked against that record.
func (s *Store) UpdateClient(ctx context.Context, id string, update func(data.Client) (data.Client, error)) (data.Client, error) {
	if err := s.begin(ctx, "update client"); err != nil {
		return data.Client{}, err
	}
	var out data.Client
	err := s.tx(ctx, func(tx pgx.Tx) error {
		old, err := queryOne[data.Client](ctx, tx, "SELECT body FROM clients WHERE id = $1 FOR UPDATE", id)
		if err != nil {
			return fmt.Errorf("update client %q: %w", id, err)
		}
		arg, _ := decode[data.Client](encode(old)) // update may change its argument
		next, err := update(arg)
		if err != nil {
			return err
		}
		if err := data.ValidateClient(next); err != nil {
			return fmt.Errorf("update client %q: %w", id, err)
		}
		if err := data.ValidateClientChange(old, next); err != nil {
			return fmt.Errorf("update client %q: %w", id, err)
		}
		b := encode(next)
		if _, err := tx.Exec(ctx, "UPDATE clients SET status = $2, body = $3 WHERE id = $1", id, string(next.Status), b); err != nil {
			return fmt.Errorf("update client %q: %w", id, err)
		}
		if err := notify(ctx, tx, "client "+id); err != nil {
			return fmt.Errorf("update client %q: %w", id, err)
		}
		out, err = decode[data.Client](b)
		return err
	})
	if err != nil {
		return data.Client{}, err
	}
	return out, nil
}

// Authorization codes.

// insertChecked is the statement shape of CreateAuthCode, CreateSession
// and PutGrant: the user's row is read FOR KEY SHARE (see users.go) and the
// insert (%s, its $1 the user ID) happens only if the user is not disabled.
// It returns whether the user is disabled and whether a row was written.
const insertChecked = `WITH u AS MATERIALIZED (SELECT disabled FROM users WHERE id = $1 FOR KEY SHARE),
	i AS (%s RETURNING 1)
SELECT coalesce((SELECT disabled FROM u), false), EXISTS (SELECT 1 FROM i)`

// notDisabled is the condition insertChecked's insert is made on.
const notDisabled = `WHERE NOT coalesce((SELECT disabled FROM u), false)`

var (
	insertCode = fmt.Sprintf(insertChecked, `INSERT INTO auth_codes (user_id, hash, used, expires_ns, body)
		SELECT $1, $2, $3, $4, $5 `+notDisabled+` ON CONFLICT (hash) DO NOTHING`)
	insertSession = fmt.Sprintf(insertChecked, `INSERT INTO sessions (user_id, hash, expires_ns, body)
		SELECT $1, $2, $3, $4 `+notDisabled+` ON CONFLICT (hash) DO NOTHING`)
	upsertGrant = fmt.Sprintf(insertChecked, `INSERT INTO grants (user_id, client_id, body)
		SELECT $1, $2, $3 `+notDisabled+` ON CONFLICT (user_id, client_id) DO UPDATE SET body = excluded.body`)
)

// execChecked runs an insertChecked statement: ErrUserDisabled when the
// user is disabled, ErrExists when nothing was written.
func (s *Store) execChecked(ctx context.Context, sql string, userID int64, args ...any) error {
	var disabled, wrote bool
	if err := s.pool.QueryRow(ctx, sql, append([]any{userID}, args...)...).Scan(&disabled, &wrote); err != nil {
		return err
	}
	switch {
	case disabled:
		return fmt.Errorf("user %d: %w", userID, data.ErrUserDisabled)
	case !wrote:
		return data.ErrExists
	}
	return nil
}

// CreateAuthCode implements [data.Store.CreateAuthCode] in one statement
// (see insertChecked).
func (s *Store) CreateAuthCode(ctx context.Context, c data.AuthCode) error {
	if err := s.begin(ctx, "create auth code"); err != nil {
		return err
	}
	if len(c.Hash) == 0 {
		return fmt.Errorf("create auth code: %w", &data.RuleError{Field: "hash", Reason: "an authorization code needs its hash"})
	}
	if err := s.execChecked(ctx, insertCode, c.UserID, c.Hash, c.Used, unixNano(c.ExpiresAt), encode(c)); err != nil {
		return fmt.Errorf("create auth code: %w", err)
	}
	return nil
}

// redeem marks the code used and inserts the family in one statement: the
// UPDATE matches only a code that is still unused (a concurrent exchange
// that committed first leaves it nothing to match, so nothing is
// inserted), and a family ID that exists already fails the whole
// statement, code included.
const redeem = `WITH c AS (
	UPDATE auth_codes SET used = true, body = $2 WHERE hash = $1 AND NOT used RETURNING 1)
INSERT INTO families (id, client_id, user_id, expires_ns, gc_ns, body) SELECT $3, $4, $7, $5, $5, $6 FROM c`

// ExchangeAuthCode implements [data.Store.ExchangeAuthCode]. Of any number
// of concurrent exchanges of one code, on any number of replicas, exactly
// one redeems it (see redeem); the others read the code again and get
// [data.ErrCodeUsed].
func (s *Store) ExchangeAuthCode(ctx context.Context, hash []byte, exchange func(data.AuthCode) (data.Family, error)) (data.AuthCode, data.Family, error) {
	const op = "exchange auth code"
	if err := s.begin(ctx, op); err != nil {
		return data.AuthCode{}, data.Family{}, err
	}
	for attempt := 1; ; attempt++ {
		var used bool
		var b []byte
		err := s.pool.QueryRow(ctx, "SELECT used, body FROM auth_codes WHERE hash = $1", hash).Scan(&used, &b)
		if errors.Is(err, pgx.ErrNoRows) {
			return data.AuthCode{}, data.Family{}, fmt.Errorf("%s: %w", op, data.ErrNotFound)
		}
		if err != nil {
			return data.AuthCode{}, data.Family{}, fmt.Errorf("%s: %w", op, err)
		}
		code, err := decode[data.AuthCode](b)
		if err != nil {
			return data.AuthCode{}, data.Family{}, fmt.Errorf("%s: %w", op, err)
		}
		if used || code.Used {
			code.Used = true
			return code, data.Family{}, fmt.Errorf("%s: %w", op, data.ErrCodeUsed)
		}
		arg, _ := decode[data.AuthCode](b)
		fam, err := exchange(arg)
		if err != nil {
			return data.AuthCode{}, data.Family{}, err
		}
		if fam.ID == "" {
			return data.AuthCode{}, data.Family{}, fmt.Errorf("%s: %w", op, &data.RuleError{Field: "family_id", Reason: "the new family needs an ID"})
		}
		code.Used, code.FamilyID = true, fam.ID
		cb, fb := encode(code), encode(fam)
		var tag pgconn.CommandTag
		err = retry(ctx, func() (err error) {
			tag, err = s.pool.Exec(ctx, redeem, hash, cb, fam.ID, fam.ClientID, familyExpiry(fam), fb, fam.UserID)
			return err
		})
		switch {
		case isUnique(err, "families_pkey"):
			return data.AuthCode{}, data.Family{}, fmt.Errorf("%s: family %q: %w", op, fam.ID, data.ErrExists)
		case err != nil:
			return data.AuthCode{}, data.Family{}, fmt.Errorf("%s: %w", op, err)
		case tag.RowsAffected() == 1:
			s.fams.put(fam.ID, 1, fam)
			c, err := decode[data.AuthCode](cb)
			if err != nil {
				return data.AuthCode{}, data.Family{}, err
			}
			f, err := decode[data.Family](fb)
			return c, f, err
		case attempt >= maxAttempts:
			return data.AuthCode{}, data.Family{}, fmt.Errorf("%s: %w: the code kept changing", op, data.ErrConflict)
		}
		// Another exchange redeemed the code between our read and our
		// write: read it again (it is used now).
		s.stats.casLost.Add(1)
	}
}

// Refresh-token families.

// GetFamily implements [data.Store.GetFamily].
func (s *Store) GetFamily(ctx context.Context, id string) (data.Family, error) {
	if err := s.begin(ctx, "get family"); err != nil {
		return data.Family{}, err
	}
	f, err := queryOne[data.Family](ctx, s.pool, "SELECT body FROM families WHERE id = $1", id)
	if err != nil {
		return data.Family{}, fmt.Errorf("get family %q: %w", id, err)
	}
	return f, nil
}

// RotateRefreshToken implements [data.Store.RotateRefreshToken] as a
// compare-and-swap: it reads the family and its version, decides in this
// process (a constant-time hash comparison, then update), and writes or
// deletes only if the version is still the one it read. A write that lost
// to a concurrent one (or to a stale guess) matches no row; the delete and
// the promised write then return, in the same statement, the family as it
// is (see casMiss), and the loop decides again on that without another
// read. So of n concurrent rotations with
// the same token exactly one stores its successor, and the others find a
// token that is no longer current, which revokes the family.
//
// Round trips (each one statement, autocommitted, one durable commit at
// most): one when this process rotated or created the family last
// (famCache: the read is skipped); one too when another replica rotated
// since (replicas taking turns on one family) and the caller made the
// rotation promise (data.WithPresented, as the refresh grant does): the
// stale guess, with the presented token as current, is written where the
// stored family is that (rotatePromised). Two otherwise: a read and the
// write when this process has no guess; the conditional write, which
// misses and returns the family, then the write, when the promised write
// finds the presented token is not the current one (a replay, the grace)
// or the family changed in more than a rotation changes (narrowed
// elsewhere), or when a guess judged a replay (without the promise) is
// stale. A rotation decided on a guess whose write misses (a race) reads:
// three.
func (s *Store) RotateRefreshToken(ctx context.Context, id string, update func(data.Family) (data.Family, error)) (data.Family, error) {
	const op = "rotate refresh token"
	if err := s.begin(ctx, op); err != nil {
		return data.Family{}, err
	}
	var (
		missed   bool   // the last write missed and returned the family:
		mVersion int64  // its version
		mBody    []byte // and body
	)
	for attempt := 1; ; attempt++ {
		var version int64
		var b []byte
		var old data.Family
		e, guessed := s.fams.get(id)
		if p := data.Presented(ctx); guessed && attempt == 1 && len(p) > 0 && !data.Equal(e.fam.TokenHash, p) {
			// The guess is stale (another replica rotated since): one
			// conditional write on the rotation promise (data.WithPresented).
			f, miss, err := s.rotatePromised(ctx, id, data.Normalize(e.fam), p, update)
			switch {
			case err != nil:
				return data.Family{}, fmt.Errorf("%s: %w", op, err)
			case miss.done:
				return f, nil
			case miss.gone:
				s.fams.drop(id)
				return data.Family{}, fmt.Errorf("%s: family %q: %w", op, id, data.ErrNotFound)
			}
			s.fams.drop(id)
			if miss.body != nil {
				// The write found the family otherwise: decide on it.
				missed, mVersion, mBody = true, miss.version, miss.body
				s.stats.casLost.Add(1)
			}
			continue // (update refused the guess: read)
		}
		switch {
		case missed:
			guessed, version, b = false, mVersion, mBody
		case guessed && attempt == 1:
			version, old = e.version, data.Normalize(e.fam) // a guess; the write checks it
		default:
			guessed = false
			err := s.pool.QueryRow(ctx, "SELECT version, body FROM families WHERE id = $1", id).Scan(&version, &b)
			if errors.Is(err, pgx.ErrNoRows) {
				s.fams.drop(id)
				return data.Family{}, fmt.Errorf("%s: family %q: %w", op, id, data.ErrNotFound)
			}
			if err != nil {
				return data.Family{}, fmt.Errorf("%s: %w", op, err)
			}
		}
		if !guessed {
			var err error
			if old, err = decode[data.Family](b); err != nil {
				return data.Family{}, fmt.Errorf("%s: %w", op, err)
			}
		}
		missed = false
		var err error
		var miss casMiss
		// update decides on the record read (or guessed); every write is
		// conditional on its version, so a decision taken on a record
		// that has since changed never takes effect: the loop asks
		// update again on the record the write found.
		next, uerr := update(old)
		switch {
		case errors.Is(uerr, data.ErrTokenReused):
			// The stored record, not update's argument (which update may
			// have changed): it names the tombstone and is returned.
			stored := data.Normalize(e.fam)
			if !guessed {
				if stored, err = decode[data.Family](b); err != nil {
					return data.Family{}, fmt.Errorf("%s: %w", op, err)
				}
			}
			err = retry(ctx, func() (err error) {
				miss, err = s.deleteFamilyAt(ctx, id, version, stored)
				return err
			})
			if err != nil {
				return data.Family{}, fmt.Errorf("%s: %w", op, err)
			}
			s.fams.drop(id)
			if miss.done {
				return stored, uerr
			}
		case uerr != nil && guessed:
			// A refusal decided on a guess is not final: the record may
			// have moved on at another replica (a later expiry, say).
			// Read it and ask again.
			s.fams.drop(id)
			continue
		case uerr != nil:
			return data.Family{}, uerr
		default:
			if next.ID != id || next.ClientID != old.ClientID {
				return data.Family{}, fmt.Errorf("%s: %w", op, &data.RuleError{Field: "family", Reason: "a rotation cannot change the family or client ID"})
			}
			nb := encode(next)
			var tag pgconn.CommandTag
			err = retry(ctx, func() (err error) {
				tag, err = s.pool.Exec(ctx, rotateSQL, id, version, familyExpiry(next), nb)
				return err
			})
			if err != nil {
				return data.Family{}, fmt.Errorf("%s: %w", op, err)
			}
			if tag.RowsAffected() == 1 {
				s.fams.put(id, version+1, next)
				return data.Normalize(next), nil
			}
			s.fams.drop(id) // lost a race, or a stale guess: read
		}
		if miss.gone {
			return data.Family{}, fmt.Errorf("%s: family %q: %w", op, id, data.ErrNotFound)
		}
		if miss.body != nil {
			missed, mVersion, mBody = true, miss.version, miss.body
		}
		s.stats.casLost.Add(1)
		if attempt >= maxAttempts {
			return data.Family{}, fmt.Errorf("%s: family %q: %w: it kept changing", op, id, data.ErrConflict)
		}
	}
}

// promisedSQL stores the successor $3 (expiry $2) of the family $1 if it is the
// rotation of the stored family by update's rotation promise
// (data.WithPresented): its token hash is the presented one ($4, as JSON),
// every field but those the promise leaves out ($6) is the guess's ($5),
// and its expiry is no earlier than the guess's ($7). The successor
// takes the stored generation plus one. Otherwise the family is returned
// as it is (casMissSelect).
const promisedSQL = `WITH w AS (
	UPDATE families SET version = version + 1, expires_ns = $2, gc_ns = least(gc_ns, $2),
		body = jsonb_set($3::jsonb, '{generation}', to_jsonb(coalesce((body->>'generation')::numeric, 0) + 1))
	WHERE id = $1 AND body->'token_hash' = $4::jsonb AND body - $6::text[] = $5::jsonb - $6::text[] AND expires_ns >= $7
	RETURNING version, body)
` + casMissSelect

// promiseFree are the JSON fields of a family that the rotation promise
// lets differ between the guess and the stored family.
var promiseFree = []string{"token_hash", "prev_hash", "rotated_at", "expires_at", "generation"}

// rotatePromised rotates the family id in one statement on the rotation
// promise (data.WithPresented), from the stale guess g and the presented
// hash: update decides on g with TokenHash set to presented, and
// promisedSQL writes only where that decision is the one update would take
// on the stored family. It returns the stored successor (miss.done), or
// what the write found instead, or, when update refuses, a zero casMiss
// (the caller reads the family and asks update again).
func (s *Store) rotatePromised(ctx context.Context, id string, g data.Family, presented []byte, update func(data.Family) (data.Family, error)) (data.Family, casMiss, error) {
	h := data.Normalize(g) // a copy: update may change it
	h.TokenHash = presented
	next, err := update(h)
	if err != nil || next.ID != id || next.ClientID != g.ClientID {
		return data.Family{}, casMiss{}, nil
	}
	tok, err := json.Marshal(presented)
	if err != nil {
		return data.Family{}, casMiss{}, err
	}
	var miss casMiss
	err = retry(ctx, func() (err error) {
		miss, err = scanMiss(s.pool.QueryRow(ctx, promisedSQL, id, familyExpiry(next), encode(next),
			json.RawMessage(tok), encode(g), promiseFree, familyExpiry(g)))
		return err
	})
	if err != nil || !miss.done {
		return data.Family{}, miss, err
	}
	f, err := decode[data.Family](miss.body)
	if err != nil {
		return data.Family{}, casMiss{}, err
	}
	s.fams.put(id, miss.version, f)
	return f, miss, nil
}

// rotateSQL stores a family's successor if its version is still $2. A
// plain UPDATE: this is the write of every rotation on a right guess, and
// returning the family on a miss (casMissSelect) cost it measurably more
// CPU on both sides (docs/PERFORMANCE.md); a miss here (a race, or a
// stale guess with the same current token) is rare and reads.
const rotateSQL = `UPDATE families SET version = version + 1, expires_ns = $3, gc_ns = least(gc_ns, $3), body = $4
	WHERE id = $1 AND version = $2`

// casMissSelect ends a conditional write on the family $1 whose CTE w
// returns (version, body) when it wrote: one row, (true, w's version,
// w's body) when it wrote,
// else (false, version, body) of the family as the statement's snapshot
// has it; no row when the family is gone. In READ COMMITTED that snapshot
// may be a little older than the row the write found (a concurrent
// commit in between): the next conditional write then misses again.
const casMissSelect = `SELECT true, w.version, w.body FROM w
UNION ALL
SELECT false, f.version, f.body FROM families f WHERE f.id = $1 AND NOT EXISTS (SELECT 1 FROM w)`

// casMiss is what a conditional write on a family found.
type casMiss struct {
	done    bool   // it wrote
	gone    bool   // it did not: the family no longer exists
	version int64  // else the family's version
	body    []byte // and body
}

func scanMiss(row pgx.Row) (casMiss, error) {
	var m casMiss
	err := row.Scan(&m.done, &m.version, &m.body)
	if errors.Is(err, pgx.ErrNoRows) {
		return casMiss{gone: true}, nil
	}
	return m, err
}

// DeleteFamily implements [data.Store.DeleteFamily].
func (s *Store) DeleteFamily(ctx context.Context, id string) error {
	if err := s.begin(ctx, "delete family"); err != nil {
		return err
	}
	defer s.fams.drop(id)
	var version int64
	var b []byte
	err := s.pool.QueryRow(ctx, "SELECT version, body FROM families WHERE id = $1", id).Scan(&version, &b)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("delete family %q: %w", id, data.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete family %q: %w", id, err)
	}
	for attempt := 1; ; attempt++ {
		f, err := decode[data.Family](b)
		if err != nil {
			return fmt.Errorf("delete family %q: %w", id, err)
		}
		var miss casMiss
		err = retry(ctx, func() (err error) {
			miss, err = s.deleteFamilyAt(ctx, id, version, f)
			return err
		})
		switch {
		case err != nil:
			return fmt.Errorf("delete family %q: %w", id, err)
		case miss.done:
			return nil
		case miss.gone:
			return fmt.Errorf("delete family %q: %w", id, data.ErrNotFound)
		}
		// Rotated since the read: again on the family as the delete
		// found it, so that the tombstone names its last issuance.
		s.stats.casLost.Add(1)
		if attempt >= maxAttempts {
			return fmt.Errorf("delete family %q: %w: it kept changing", id, data.ErrConflict)
		}
		version, b = miss.version, miss.body
	}
}

// deleteFamilySQL deletes a family at a version and stores its tombstone;
// a family at another version is returned as it is (casMissSelect).
const deleteFamilySQL = `WITH w AS (DELETE FROM families WHERE id = $1 AND version = $2 RETURNING version, NULL::jsonb AS body),
t AS (INSERT INTO revoked_grants (grant_id, issued_ns, body) SELECT $1, $3, $4 FROM w ` + tombstoneUpsert + `)
` + casMissSelect

// putTombstoneSQL stores a tombstone ($1 grant ID, $2 issued_ns, $3 body).
const putTombstoneSQL = `INSERT INTO revoked_grants (grant_id, issued_ns, body) VALUES ($1, $2, $3) ` + tombstoneUpsert

// tombstoneUpsert keeps a grant's latest tombstone.
const tombstoneUpsert = `ON CONFLICT (grant_id) DO UPDATE SET issued_ns = excluded.issued_ns, body = excluded.body`

// deleteFamilyAt deletes the family id if its version is still version,
// and stores the tombstone of f (the record at that version) in the same
// statement; otherwise it returns the family as it is.
func (s *Store) deleteFamilyAt(ctx context.Context, id string, version int64, f data.Family) (casMiss, error) {
	r := data.RevocationOf(f)
	return scanMiss(s.pool.QueryRow(ctx, deleteFamilySQL, id, version, unixNano(r.LastIssuedAt), encode(r)))
}

// ListRevoked implements [data.Store.ListRevoked].
func (s *Store) ListRevoked(ctx context.Context, since time.Time) ([]data.Revocation, error) {
	if err := s.begin(ctx, "list revoked"); err != nil {
		return nil, err
	}
	rs, err := queryAll[data.Revocation](ctx, s.pool, "SELECT body FROM revoked_grants WHERE issued_ns >= $1 ORDER BY grant_id", unixNano(since))
	if err != nil {
		return nil, fmt.Errorf("list revoked: %w", err)
	}
	return rs, nil
}

// ListFamilies implements [data.Store.ListFamilies], ordered by ID.
func (s *Store) ListFamilies(ctx context.Context, clientID string) ([]data.Family, error) {
	if err := s.begin(ctx, "list families"); err != nil {
		return nil, err
	}
	var fs []data.Family
	var err error
	if clientID == "" {
		fs, err = queryAll[data.Family](ctx, s.pool, "SELECT body FROM families ORDER BY id")
	} else {
		fs, err = queryAll[data.Family](ctx, s.pool, "SELECT body FROM families WHERE client_id = $1 ORDER BY id", clientID)
	}
	if err != nil {
		return nil, fmt.Errorf("list families: %w", err)
	}
	return fs, nil
}

// ListUserFamilies implements [data.Store.ListUserFamilies] on the
// families_user index, ordered by client ID, then ID.
func (s *Store) ListUserFamilies(ctx context.Context, userID int64) ([]data.Family, error) {
	if err := s.begin(ctx, "list user families"); err != nil {
		return nil, err
	}
	fs, err := queryAll[data.Family](ctx, s.pool, "SELECT body FROM families WHERE user_id = $1 ORDER BY client_id, id", userID)
	if err != nil {
		return nil, fmt.Errorf("list user families: %w", err)
	}
	return fs, nil
}

// RevokeApp implements [data.Store.RevokeApp] in one transaction, one
// statement per table, codes before families (as a disable does, see
// revokeUser): an exchange whose redeem statement holds the code's row
// makes the code delete wait for its commit, and the family delete, a
// later statement, then sees the family it stored; an exchange that comes
// after the code delete finds no code. A rotation in flight makes the
// family delete wait for it, which then deletes (and tombstones) the
// rotated record; a rotation after it finds no family.
func (s *Store) RevokeApp(ctx context.Context, userID int64, clientID string) (data.AppRevocation, error) {
	const op = "revoke app"
	if err := s.begin(ctx, op); err != nil {
		return data.AppRevocation{}, err
	}
	var r data.AppRevocation
	err := s.tx(ctx, func(tx pgx.Tx) error {
		r = data.AppRevocation{}
		tag, err := tx.Exec(ctx, "DELETE FROM auth_codes WHERE user_id = $1 AND body->>'client_id' = $2", userID, clientID)
		if err != nil {
			return err
		}
		r.Codes = int(tag.RowsAffected())
		rows, err := tx.Query(ctx, "DELETE FROM families WHERE user_id = $1 AND client_id = $2 RETURNING body", userID, clientID)
		if err != nil {
			return err
		}
		fams, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (data.Family, error) {
			var b []byte
			if err := row.Scan(&b); err != nil {
				return data.Family{}, err
			}
			return decode[data.Family](b)
		})
		if err != nil {
			return err
		}
		for _, f := range fams {
			rv := data.RevocationOf(f)
			if _, err := tx.Exec(ctx, putTombstoneSQL, rv.GrantID, unixNano(rv.LastIssuedAt), encode(rv)); err != nil {
				return err
			}
			r.Families = append(r.Families, f.ID)
		}
		slices.Sort(r.Families)
		tag, err = tx.Exec(ctx, `WITH d AS (DELETE FROM grants WHERE user_id = $1 AND client_id = $2 RETURNING user_id, client_id)
			SELECT pg_notify('`+Channel+`', 'grant '||user_id||' '||client_id) FROM d`, userID, clientID)
		if err != nil {
			return err
		}
		r.Grant = tag.RowsAffected() > 0
		return nil
	})
	for _, id := range r.Families {
		s.fams.drop(id)
	}
	if err != nil {
		return data.AppRevocation{}, fmt.Errorf("%s %q of user %d: %w", op, clientID, userID, err)
	}
	return r, nil
}

// Consent grants.

// PutGrant implements [data.Store.PutGrant] in one statement (see
// insertChecked).
func (s *Store) PutGrant(ctx context.Context, g data.Grant) error {
	if err := s.begin(ctx, "put grant"); err != nil {
		return err
	}
	if err := s.execChecked(ctx, upsertGrant, g.UserID, g.ClientID, encode(g)); err != nil {
		return fmt.Errorf("put grant of user %d to %q: %w", g.UserID, g.ClientID, err)
	}
	return nil
}

// GetGrant implements [data.Store.GetGrant].
func (s *Store) GetGrant(ctx context.Context, userID int64, clientID string) (data.Grant, error) {
	if err := s.begin(ctx, "get grant"); err != nil {
		return data.Grant{}, err
	}
	g, err := queryOne[data.Grant](ctx, s.pool, "SELECT body FROM grants WHERE user_id = $1 AND client_id = $2", userID, clientID)
	if err != nil {
		return data.Grant{}, fmt.Errorf("get grant of user %d to %q: %w", userID, clientID, err)
	}
	return g, nil
}

// ListGrants implements [data.Store.ListGrants], ordered by client ID.
func (s *Store) ListGrants(ctx context.Context, userID int64) ([]data.Grant, error) {
	if err := s.begin(ctx, "list grants"); err != nil {
		return nil, err
	}
	gs, err := queryAll[data.Grant](ctx, s.pool, "SELECT body FROM grants WHERE user_id = $1 ORDER BY client_id", userID)
	if err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	return gs, nil
}

// DeleteGrant implements [data.Store.DeleteGrant].
func (s *Store) DeleteGrant(ctx context.Context, userID int64, clientID string) error {
	if err := s.begin(ctx, "delete grant"); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `WITH d AS (DELETE FROM grants WHERE user_id = $1 AND client_id = $2 RETURNING user_id, client_id)
		SELECT pg_notify('`+Channel+`', 'grant '||user_id||' '||client_id) FROM d`, userID, clientID)
	if err != nil {
		return fmt.Errorf("delete grant of user %d to %q: %w", userID, clientID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete grant of user %d to %q: %w", userID, clientID, data.ErrNotFound)
	}
	return nil
}

// Sessions.

// CreateSession implements [data.Store.CreateSession] in one statement
// (see insertChecked).
func (s *Store) CreateSession(ctx context.Context, sess data.Session) error {
	if err := s.begin(ctx, "create session"); err != nil {
		return err
	}
	if len(sess.Hash) == 0 {
		return fmt.Errorf("create session: %w", &data.RuleError{Field: "hash", Reason: "a session needs its hash"})
	}
	if err := s.execChecked(ctx, insertSession, sess.UserID, sess.Hash, unixNano(sess.ExpiresAt), encode(sess)); err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// NonceUsed implements [data.Store.NonceUsed].
func (s *Store) NonceUsed(ctx context.Context, key []byte) (bool, error) {
	if err := s.begin(ctx, "nonce used"); err != nil {
		return false, err
	}
	var used bool
	if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM nonces WHERE key = $1)", key).Scan(&used); err != nil {
		return false, fmt.Errorf("nonce used: %w", err)
	}
	return used, nil
}

// UseNonce implements [data.Store.UseNonce]: the primary key decides
// between concurrent inserts, on any replica.
func (s *Store) UseNonce(ctx context.Context, key []byte, expires time.Time) error {
	if err := s.begin(ctx, "use nonce"); err != nil {
		return err
	}
	if len(key) == 0 {
		return fmt.Errorf("use nonce: %w", &data.RuleError{Field: "key", Reason: "a nonce needs its key"})
	}
	tag, err := s.pool.Exec(ctx, "INSERT INTO nonces (key, expires_ns) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
		key, unixNano(expires))
	if err != nil {
		return fmt.Errorf("use nonce: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("use nonce: %w", data.ErrExists)
	}
	return nil
}

// GetSession implements [data.Store.GetSession].
func (s *Store) GetSession(ctx context.Context, hash []byte) (data.Session, error) {
	if err := s.begin(ctx, "get session"); err != nil {
		return data.Session{}, err
	}
	sess, err := queryOne[data.Session](ctx, s.pool, "SELECT body FROM sessions WHERE hash = $1", hash)
	if err != nil {
		return data.Session{}, fmt.Errorf("get session: %w", err)
	}
	return sess, nil
}

// DeleteSession implements [data.Store.DeleteSession].
func (s *Store) DeleteSession(ctx context.Context, hash []byte) error {
	if err := s.begin(ctx, "delete session"); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, "DELETE FROM sessions WHERE hash = $1", hash)
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete session: %w", data.ErrNotFound)
	}
	return nil
}

// Signing keys.

// ListKeys implements [data.Store.ListKeys].
func (s *Store) ListKeys(ctx context.Context) ([]data.SigningKey, error) {
	if err := s.begin(ctx, "list keys"); err != nil {
		return nil, err
	}
	ks, err := queryOne[[]data.SigningKey](ctx, s.pool, "SELECT body FROM key_set WHERE id = 1")
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return ks, nil
}

// UpdateKeys implements [data.Store.UpdateKeys]. The key set's one row is
// locked from the read to the commit: rotations, revocations and prunes
// from any number of processes apply one after another, each to the set
// the previous one committed, and a set that breaks
// [data.ValidateKeySet] is never written.
func (s *Store) UpdateKeys(ctx context.Context, update func([]data.SigningKey) ([]data.SigningKey, error)) ([]data.SigningKey, error) {
	if err := s.begin(ctx, "update keys"); err != nil {
		return nil, err
	}
	var out []data.SigningKey
	err := s.tx(ctx, func(tx pgx.Tx) error {
		cur, err := queryOne[[]data.SigningKey](ctx, tx, "SELECT body FROM key_set WHERE id = 1 FOR UPDATE")
		if err != nil {
			return fmt.Errorf("update keys: %w", err)
		}
		next, err := update(cur)
		if err != nil {
			return err
		}
		if err := data.ValidateKeySet(next); err != nil {
			return fmt.Errorf("update keys: %w", err)
		}
		if next == nil {
			next = []data.SigningKey{}
		}
		b := encode(next)
		if _, err := tx.Exec(ctx, "UPDATE key_set SET version = version + 1, body = $1 WHERE id = 1", b); err != nil {
			return fmt.Errorf("update keys: %w", err)
		}
		if err := notify(ctx, tx, "keys"); err != nil {
			return fmt.Errorf("update keys: %w", err)
		}
		out, err = decode[[]data.SigningKey](b)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// gc deletes every expired code, family, session and nonce in one statement,
// and moves up the gc_ns of the families it found alive (see the
// migration).
const gc = `WITH a AS (DELETE FROM auth_codes WHERE expires_ns < $1 RETURNING 1),
	f AS (DELETE FROM families WHERE gc_ns < $1 AND expires_ns < $1 RETURNING 1),
	fl AS (UPDATE families SET gc_ns = expires_ns WHERE gc_ns < $1 AND expires_ns >= $1),
	s AS (DELETE FROM sessions WHERE expires_ns < $1 RETURNING 1),
	n AS (DELETE FROM nonces WHERE expires_ns < $1 RETURNING 1),
	r AS (DELETE FROM revoked_grants WHERE issued_ns < $2 RETURNING 1)
SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM f), (SELECT count(*) FROM s), (SELECT count(*) FROM n), (SELECT count(*) FROM r)`

// GarbageCollect implements [data.Store.GarbageCollect].
func (s *Store) GarbageCollect(ctx context.Context, now time.Time) (data.GCResult, error) {
	if err := s.begin(ctx, "garbage collect"); err != nil {
		return data.GCResult{}, err
	}
	var a, f, ss, n, r int64
	err := retry(ctx, func() error {
		return s.pool.QueryRow(ctx, gc, unixNano(now), unixNano(now.Add(-data.RevocationKeep))).Scan(&a, &f, &ss, &n, &r)
	})
	if err != nil {
		return data.GCResult{}, fmt.Errorf("garbage collect: %w", err)
	}
	return data.GCResult{AuthCodes: int(a), Families: int(f), Sessions: int(ss), Nonces: int(n), Revocations: int(r)}, nil
}
