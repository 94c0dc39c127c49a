package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// AuditEvent is one audit record: what was done, when, by whom (in Body).
type AuditEvent struct {
	ID    int64           `json:"id"`
	At    time.Time       `json:"at"`
	Event string          `json:"event"`
	Body  json.RawMessage `json:"body"`
}

// AppendAudit stores an audit record; body is a JSON object. It goes to
// pgx as a json.RawMessage, like every record (encode): a plain []byte
// would be sent as bytea in the query modes that do not describe the
// statement (default_query_exec_mode=exec or simple_protocol), and the
// jsonb column would refuse it.
func (s *Store) AppendAudit(ctx context.Context, at time.Time, event string, body []byte) error {
	if err := s.begin(ctx, "append audit event"); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, "INSERT INTO audit_events (at, event, body) VALUES ($1, $2, $3)", at.UTC(), event, json.RawMessage(body)); err != nil {
		return fmt.Errorf("append audit event: %w", err)
	}
	return nil
}

// ListAudit returns the audit records since since, oldest first, at most
// limit of them.
func (s *Store) ListAudit(ctx context.Context, since time.Time, limit int) ([]AuditEvent, error) {
	if err := s.begin(ctx, "list audit events"); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, "SELECT id, at, event, body FROM audit_events WHERE at >= $1 ORDER BY id LIMIT $2", since.UTC(), limit)
	if err != nil {
		return nil, fmt.Errorf("list audit events: %w", err)
	}
	defer rows.Close()
	out := []AuditEvent{}
	for rows.Next() {
		var e AuditEvent
		var body []byte
		if err := rows.Scan(&e.ID, &e.At, &e.Event, &body); err != nil {
			return nil, fmt.Errorf("list audit events: %w", err)
		}
		e.At, e.Body = e.At.UTC(), body
		out = append(out, e)
	}
	return out, rows.Err()
}
