package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

type auditRow struct {
	event string
	body  map[string]any
}

type fakeAudit struct {
	rows []auditRow
	err  error
}

func (f *fakeAudit) AppendAudit(_ context.Context, _ time.Time, event string, body []byte) error {
	if f.err != nil {
		return f.err
	}
	m := map[string]any{}
	if err := json.Unmarshal(body, &m); err != nil {
		return err
	}
	f.rows = append(f.rows, auditRow{event, m})
	return nil
}

// TestTeeAudit: the "audit" records are stored with their attributes
// (those added by With, groups as objects) even when the log level would
// drop them; other records are not stored; a store that fails is logged,
// and the record still reaches the log.
func TestTeeAudit(t *testing.T) {
	var logged bytes.Buffer
	store := &fakeAudit{}
	next := slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelError})
	log := slog.New(TeeAudit(next, store)).With("replica", "r1")
	log.Info("audit", "event", "user_disabled", "user_id", 7, slog.Group("actor", "via", "cli", "uid", 0))
	log.Info("request", "path", "/token")
	log.Error("audit", "event", "client_rejected")
	if len(store.rows) != 2 {
		t.Fatalf("stored %d records; want the 2 audit records", len(store.rows))
	}
	r := store.rows[0]
	actor, _ := r.body["actor"].(map[string]any)
	if r.event != "user_disabled" || r.body["user_id"] != float64(7) || r.body["replica"] != "r1" || actor["via"] != "cli" {
		t.Fatalf("stored %+v; want the event with its attributes, With's and the actor group", r)
	}
	if strings.Contains(logged.String(), "user_disabled") || !strings.Contains(logged.String(), "client_rejected") {
		t.Fatalf("log = %q; want the log's own level obeyed", logged.String())
	}

	logged.Reset()
	store.err = errors.New("database down")
	log.Info("audit", "event", "secret_revoked")
	if !strings.Contains(logged.String(), "store the audit record in the database") || !strings.Contains(logged.String(), "database down") {
		t.Fatalf("log = %q; want the failed store reported", logged.String())
	}
}
