package admin

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"oauthd/data/memory"
)

// TestAuditNamesOperator: every audit record names who acted — the peer's
// uid and pid over the admin socket (SO_PEERCRED), the local user for the
// CLI working on the file — and an unnamed caller is "unknown", not blank.
func TestAuditNamesOperator(t *testing.T) {
	uid, pid := os.Getuid(), os.Getpid()
	tests := []struct {
		name  string
		svc   func(l *Local) Service
		wants []string
	}{
		{"socket", func(l *Local) Service { return serveSocket(t, Handler(l)) },
			[]string{"actor.via=admin_socket", fmt.Sprintf("actor.uid=%d", uid), fmt.Sprintf("actor.pid=%d", pid)}},
		{"cli on the file", func(l *Local) Service { return l.WithActor(Actor{Via: "cli", UID: uid, PID: pid}) },
			[]string{"actor.via=cli", fmt.Sprintf("actor.uid=%d", uid)}},
		{"unnamed", func(l *Local) Service { return l },
			[]string{"actor.via=unknown", "actor.uid=-1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			store := memory.New()
			t.Cleanup(func() { store.Close() })
			local := NewLocal(store, &fakeKeys{}, slog.New(slog.NewTextHandler(&buf, nil)), func() time.Time { return t0 })
			svc := tc.svc(local)
			addDev(t, svc)
			rec := ""
			for _, l := range strings.Split(buf.String(), "\n") {
				if strings.Contains(l, "event=user_added") {
					rec = l
				}
			}
			if rec == "" {
				t.Fatalf("no user_added audit record in %q", buf.String())
			}
			for _, w := range tc.wants {
				if !strings.Contains(rec, w) {
					t.Errorf("audit record %q; want it to contain %q", rec, w)
				}
			}
		})
	}
}
