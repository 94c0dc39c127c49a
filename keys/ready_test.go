package keys_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/keys"
)

// readyStore is a key store whose reads can fail, hang, or lose the
// active key.
type readyStore struct {
	*countingStore
	mode     string // "", "down", "hang", "no-active"
	deadline time.Duration
}

func (s *readyStore) ListKeys(ctx context.Context) ([]data.SigningKey, error) {
	switch s.mode {
	case "down":
		return nil, errors.New("dial tcp 10.0.0.7:5432: connection refused")
	case "hang":
		// A store that never answers: what bounds the wait is the
		// deadline Ready set (checked here, not waited for).
		d, ok := ctx.Deadline()
		if !ok {
			return nil, errors.New("no deadline: Ready would wait for ever")
		}
		s.deadline = time.Until(d)
		return nil, context.DeadlineExceeded
	}
	ks, err := s.countingStore.ListKeys(ctx)
	if s.mode == "no-active" {
		var rest []data.SigningKey
		for _, k := range ks {
			if k.State != data.KeyActive {
				rest = append(rest, k)
			}
		}
		ks = rest
	}
	return ks, err
}

func TestReady(t *testing.T) {
	st := &readyStore{countingStore: newStore()}
	m := newManager(t, st, newClock(), nil)
	e := echo.New()
	e.GET("/readyz", m.ServeReady)

	tests := []struct {
		mode       string
		wantErr    error
		wantStatus int
		wantBody   map[string]string
	}{
		{"", nil, http.StatusOK, map[string]string{"status": "ready"}},
		{"down", keys.ErrStoreUnavailable, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "the database does not answer"}},
		{"hang", keys.ErrStoreUnavailable, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "the database does not answer"}},
		{"no-active", keys.ErrNoSigningKey, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "no active signing key"}},
	}
	for _, tc := range tests {
		t.Run("mode="+tc.mode, func(t *testing.T) {
			st.mode = tc.mode
			err := m.Ready(t.Context())
			if (tc.wantErr == nil) != (err == nil) || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Errorf("Ready() = %v; want %v", err, tc.wantErr)
			}
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			var body map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			if rec.Code != tc.wantStatus || len(body) != len(tc.wantBody) || body["status"] != tc.wantBody["status"] || body["reason"] != tc.wantBody["reason"] {
				t.Errorf("GET /readyz = %d %v; want %d %v", rec.Code, body, tc.wantStatus, tc.wantBody)
			}
			if strings.Contains(rec.Body.String(), "10.0.0.7") {
				t.Errorf("GET /readyz tells the cause: %s", rec.Body)
			}
		})
	}
	if st.deadline <= 0 || st.deadline > keys.ReadyTimeout {
		t.Errorf("Ready gave the store %v; want at most %v", st.deadline, keys.ReadyTimeout)
	}
}
