package postgres

import (
	"errors"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// tlsRefused is pgconn's message when the server answers a TLS request
// with "no".
const tlsRefused = "server refused TLS connection"

// explainConnect makes a failed connection say its cause first. Under
// sslmode=prefer (libpq's default, and pgx's) pgx first asks for TLS; a
// server without TLS refuses, pgx tries again without it, and reports both
// attempts with the refusal first, so that "server refused TLS
// connection" reads as the cause while the real one (a wrong password, an
// unknown database) follows. explainConnect leaves the refusal out and
// says what sslmode does; when the refusal is all there is (sslmode=require
// or stricter against a server without TLS), it says so. A connection
// nothing answered says to start the server or check the URL. Any other
// error is returned as it is. The result unwraps to err.
func explainConnect(err error) error {
	var ce *pgconn.ConnectError
	if err == nil || !errors.As(err, &ce) {
		return err
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return &hintError{err: err, msg: err.Error() + ": nothing answers there; start PostgreSQL, or check the host, port and socket of the database URL (--db or OAUTHD_DB)"}
	}
	if !strings.Contains(err.Error(), tlsRefused) {
		return err
	}
	attempts := []error{ce.Unwrap()}
	if j, ok := ce.Unwrap().(interface{ Unwrap() []error }); ok {
		attempts = j.Unwrap()
	}
	var causes []string
	for _, a := range attempts {
		if !strings.Contains(a.Error(), tlsRefused) {
			causes = append(causes, a.Error())
		}
	}
	who := "connect as " + ce.Config.User + " to database " + ce.Config.Database
	if len(causes) == 0 {
		return &hintError{err: err, msg: who + ": the server does not offer TLS, and the URL's sslmode requires it; " +
			"enable TLS on the server, or set sslmode=disable in the URL on a network you trust"}
	}
	return &hintError{err: err, msg: who + ": " + strings.Join(causes, "; ") +
		" (the server offers no TLS, so this was the attempt without it; sslmode=disable in the URL skips the TLS attempt, " +
		"sslmode=verify-full insists on TLS)"}
}

// hintError is an error with its own sentence that still unwraps to the
// cause (for errors.Is and errors.As).
type hintError struct {
	msg string
	err error
}

func (e *hintError) Error() string { return e.msg }
func (e *hintError) Unwrap() error { return e.err }
