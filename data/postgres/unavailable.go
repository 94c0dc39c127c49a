package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"oauthd/data"
)

// classify is the one place that says which failures mean the database
// cannot be reached or cannot serve now: they are wrapped in
// [data.ErrUnavailable] (servers answer 503, not 500). Those are
//   - a failed connection attempt (pgconn.ConnectError: refused, reset,
//     timed out, "the database system is starting up", …);
//   - an error pgx raised before anything was sent (pgconn.SafeToRetry:
//     a closed connection, a pool that could not connect);
//   - the connection breaking mid-statement (net.Error, EOF, ECONNRESET,
//     EPIPE, pgconn.ErrConnClosed);
//   - the server's SQLSTATE class 08 (connection exception), 57P01
//     admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now and
//     53300 too_many_connections;
//   - the store closed (a shutdown under way).
//
// Everything else (constraint violations, a bad statement, a cancelled
// request context) is returned as it is.
func classify(err error) error {
	if err == nil || errors.Is(err, data.ErrUnavailable) {
		return err
	}
	if unavailable(err) {
		return fmt.Errorf("%w: %w", data.ErrUnavailable, err)
	}
	return err
}

func unavailable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P01", "57P02", "57P03", "53300":
			return true
		}
		if strings.HasPrefix(pe.Code, "08") {
			return true
		}
		var ce *pgconn.ConnectError
		return errors.As(err, &ce) // a server's refusal to connect (auth, missing database): not transient, but no answer either
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The request's own context: the caller went away or gave up.
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), pgconn.SafeToRetry(err), errors.As(err, &ne),
		errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, ErrClosed),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
}

// pool is the connection pool with every error it returns classified
// (statements outside a transaction; a transaction's are classified by
// [Store.tx] and the other BeginFunc callers).
type pool struct{ *pgxpool.Pool }

func (p pool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	t, err := p.Pool.Exec(ctx, sql, args...)
	return t, classify(err)
}

func (p pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	r, err := p.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, classify(err)
	}
	return rows{r}, nil
}

func (p pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return row{p.Pool.QueryRow(ctx, sql, args...)}
}

func (p pool) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := p.Pool.Begin(ctx)
	return tx, classify(err)
}

func (p pool) BeginTx(ctx context.Context, o pgx.TxOptions) (pgx.Tx, error) {
	tx, err := p.Pool.BeginTx(ctx, o)
	return tx, classify(err)
}

func (p pool) Ping(ctx context.Context) error { return classify(p.Pool.Ping(ctx)) }

type rows struct{ pgx.Rows }

func (r rows) Err() error { return classify(r.Rows.Err()) }

type row struct{ pgx.Row }

func (r row) Scan(dest ...any) error { return classify(r.Row.Scan(dest...)) }
