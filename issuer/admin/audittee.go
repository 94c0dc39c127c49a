package admin

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// AuditStore keeps the audit records of every process (a database
// shared by replicas and the command line).
type AuditStore interface {
	AppendAudit(ctx context.Context, at time.Time, event string, body []byte) error
}

// auditTee is a slog.Handler that passes records to next and also stores
// every "audit" record (the audit trail of [Local]) in the database, so
// that the records of every replica and of the command line are in one
// place. Audit records are stored whatever the log level.
type auditTee struct {
	next  slog.Handler
	store AuditStore
	attrs []slog.Attr
}

// TeeAudit returns a handler that passes records to next and also
// stores every "audit" record in store, whatever the log level.
func TeeAudit(next slog.Handler, store AuditStore) slog.Handler {
	return &auditTee{next: next, store: store}
}

func (h *auditTee) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.next.Enabled(ctx, l)
}

func (h *auditTee) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "audit" {
		m := map[string]any{}
		add := func(a slog.Attr) bool { putAttr(m, a); return true }
		for _, a := range h.attrs {
			add(a)
		}
		r.Attrs(add)
		event, _ := m["event"].(string)
		body, err := json.Marshal(m)
		if err == nil {
			err = h.store.AppendAudit(context.WithoutCancel(ctx), r.Time, event, body)
		}
		if err != nil && h.next.Enabled(ctx, slog.LevelError) {
			e := slog.NewRecord(r.Time, slog.LevelError, "store the audit record in the database", r.PC)
			e.AddAttrs(slog.String("event", event), slog.Any("err", err))
			h.next.Handle(ctx, e)
		}
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

// putAttr adds a to m, groups as nested objects.
func putAttr(m map[string]any, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		sub := map[string]any{}
		for _, g := range v.Group() {
			putAttr(sub, g)
		}
		m[a.Key] = sub
		return
	}
	m[a.Key] = v.Any()
}

func (h *auditTee) WithAttrs(as []slog.Attr) slog.Handler {
	return &auditTee{next: h.next.WithAttrs(as), store: h.store, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

func (h *auditTee) WithGroup(name string) slog.Handler {
	return &auditTee{next: h.next.WithGroup(name), store: h.store, attrs: h.attrs}
}

// NewAuditCounter returns an auditCounter over next, its counter registered
// on reg.
//
// auditCounter is a slog.Handler that passes records to next and counts
// every "audit" record by its event in oauthd_audit_events_total, whatever
// the log level: refusals of unauthenticated callers (client_auth_failed,
// login_failed, login_throttled, consent_csrf_failed, …) are counted and
// logged, never stored one row per request (docs/DESIGN.md "Nothing an
// unauthenticated caller sends is stored").
type auditCounter struct {
	next   slog.Handler
	events *prometheus.CounterVec
}

func NewAuditCounter(next slog.Handler, reg prometheus.Registerer) slog.Handler {
	events := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oauthd_audit_events_total",
		Help: "Audit records by event (successes and refusals alike), whatever the log level.",
	}, []string{"event"})
	reg.MustRegister(events)
	return &auditCounter{next: next, events: events}
}

func (h *auditCounter) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.next.Enabled(ctx, l)
}

func (h *auditCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "audit" {
		event := "unknown"
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "event" {
				event = a.Value.String()
				return false
			}
			return true
		})
		h.events.WithLabelValues(event).Inc()
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *auditCounter) WithAttrs(as []slog.Attr) slog.Handler {
	return &auditCounter{next: h.next.WithAttrs(as), events: h.events}
}

func (h *auditCounter) WithGroup(name string) slog.Handler {
	return &auditCounter{next: h.next.WithGroup(name), events: h.events}
}
