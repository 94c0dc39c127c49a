package admin

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"golang.org/x/sys/unix"
)

// Actor says who asked for an admin operation, for the audit trail.
type Actor struct {
	Via string // "admin_socket", "cli" (the CLI opened the database itself) or "settings_page"
	UID int    // the operator's Unix user ID (SO_PEERCRED on the socket); -1 when unknown
	PID int    // the operator's process ID on the socket; 0 when unknown
	// User and RemoteAddr name the platform user and their address when a
	// developer acts through the client settings pages.
	User       int64
	RemoteAddr string
}

type actorKey struct{}

// WithActor returns a copy of ctx that names the operator.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ConnContext is an http.Server ConnContext for the admin socket: it reads
// the peer's credentials (SO_PEERCRED) from the Unix connection so that
// every audit record says which local user ran the command.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	a := Actor{Via: "admin_socket", UID: -1}
	if uc, ok := c.(*net.UnixConn); ok {
		if raw, err := uc.SyscallConn(); err == nil {
			raw.Control(func(fd uintptr) {
				if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
					a.UID, a.PID = int(cred.Uid), int(cred.Pid)
				}
			})
		}
	}
	return WithActor(ctx, a)
}

// WithActor returns a copy of l whose audit records name a when the
// request's context names no operator (the CLI working on the file).
func (l *Local) WithActor(a Actor) *Local {
	c := *l
	c.actor = a
	return &c
}

// String names the actor in a sentence, e.g. "user 3 (settings_page)" or
// "uid 1000 (admin_socket)".
func (a Actor) String() string {
	if a.User != 0 {
		return fmt.Sprintf("user %d (%s)", a.User, a.Via)
	}
	if a.UID >= 0 {
		return fmt.Sprintf("uid %d (%s)", a.UID, a.Via)
	}
	return a.Via
}

// actorOf returns the operator named by ctx, or l's.
func (l *Local) actorOf(ctx context.Context) Actor {
	a, ok := ctx.Value(actorKey{}).(Actor)
	if !ok {
		a = l.actor
	}
	if a.Via == "" {
		a = Actor{Via: "unknown", UID: -1}
	}
	return a
}

// audit writes one audit record with the operator named by ctx.
func (l *Local) audit(ctx context.Context, event string, args ...any) {
	a := l.actorOf(ctx)
	args = append([]any{"event", event}, args...)
	actor := []any{"via", a.Via, "uid", a.UID, "pid", a.PID}
	if a.User != 0 {
		actor = append(actor, "user_id", a.User, "remote_addr", a.RemoteAddr)
	}
	args = append(args, slog.Group("actor", actor...))
	l.log.InfoContext(ctx, "audit", args...)
}
