package postgres

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// noTLSServer is a PostgreSQL server without TLS that refuses every login
// with a wrong password (SQLSTATE 28P01), as far as the protocol goes: it
// answers an SSLRequest with 'N' and a startup with the error.
func noTLSServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				be := pgproto3.NewBackend(conn, conn)
				for range 2 {
					msg, err := be.ReceiveStartupMessage()
					if err != nil {
						return
					}
					switch msg.(type) {
					case *pgproto3.SSLRequest, *pgproto3.GSSEncRequest:
						if _, err := conn.Write([]byte("N")); err != nil {
							return
						}
					case *pgproto3.StartupMessage:
						be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "28P01", Message: `password authentication failed for user "oauthd"`})
						_ = be.Flush()
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// TestConnectErrorSaysTheCause: against a server without TLS, the default
// sslmode (prefer) makes pgx report its TLS attempt first; the error says
// the real cause instead, with what sslmode does, and still unwraps to
// the server's error. With sslmode=require the refusal is the cause, and
// the error says that. sslmode=disable is left as pgx says it.
func TestConnectErrorSaysTheCause(t *testing.T) {
	addr := noTLSServer(t)
	ctx := context.Background()
	tests := []struct {
		name, query string
		want        []string
		notWant     []string
	}{
		{"prefer", "", []string{"connect as oauthd to database oauthd: ", "password authentication failed", "sslmode=disable"}, []string{tlsRefused}},
		{"require", "?sslmode=require", []string{"does not offer TLS", "sslmode=disable"}, []string{tlsRefused}},
		{"disable", "?sslmode=disable", []string{"password authentication failed"}, []string{"sslmode", tlsRefused}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(ctx, "postgres://oauthd:wrong@"+addr+"/oauthd"+tc.query, Options{Logger: slog.New(slog.DiscardHandler)})
			if err == nil {
				t.Fatal("Open succeeded against a server that refuses every login")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Open error %q; want it to say %q", err, w)
				}
			}
			for _, nw := range tc.notWant {
				if strings.Contains(err.Error(), nw) {
					t.Errorf("Open error %q; want it without %q", err, nw)
				}
			}
			var ce *pgconn.ConnectError
			if !errors.As(err, &ce) {
				t.Errorf("Open error %q does not unwrap to *pgconn.ConnectError", err)
			}
			if _, _, err := Migrate(ctx, "postgres://oauthd:wrong@"+addr+"/oauthd"+tc.query, slog.New(slog.DiscardHandler)); err == nil || strings.Contains(err.Error(), tlsRefused) {
				t.Errorf("Migrate error %v; want one without %q", err, tlsRefused)
			}
		})
	}
}

// TestConnectErrorSaysWhatToDo: when nothing answers at the URL's address
// (a stopped server, a wrong port or socket), Open, Migrate and Inspect
// say to start the server or check the URL, and still unwrap to pgx's
// error.
func TestConnectErrorSaysWhatToDo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	url := "postgres://oauthd@" + addr + "/oauthd?sslmode=disable&connect_timeout=5"
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)
	_, openErr := Open(ctx, url, Options{Logger: logger})
	_, _, migErr := Migrate(ctx, url, logger)
	_, inErr := Inspect(ctx, url)
	for name, err := range map[string]error{"Open": openErr, "Migrate": migErr, "Inspect": inErr} {
		if err == nil {
			t.Fatalf("%s succeeded with nothing listening at %s", name, addr)
		}
		if !strings.Contains(err.Error(), "start PostgreSQL, or check the host, port and socket of the database URL") {
			t.Errorf("%s error %q; want it to say what to do", name, err)
		}
		var ce *pgconn.ConnectError
		if !errors.As(err, &ce) {
			t.Errorf("%s error %q does not unwrap to *pgconn.ConnectError", name, err)
		}
	}
}
