package issuer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
)

// TestAbandonedRequestIsNoServerError: an error that is only the client's
// hang-up (its request context cancelled) is not a 500 and logs no ERROR,
// so hanging up cannot fill the error log; any other error still is.
func TestAbandonedRequestIsNoServerError(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cancel    bool
		err       error
		wantCode  int
		wantError bool
	}{
		{"client hung up", true, fmt.Errorf("authenticate client: get client: %w", context.Canceled), http.StatusBadRequest, false},
		{"cancelled error, live request", false, fmt.Errorf("get client: %w", context.Canceled), http.StatusInternalServerError, true},
		{"other error, hung up", true, errors.New("disk on fire"), http.StatusInternalServerError, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			ctx, cancel := context.WithCancel(t.Context())
			if tc.cancel {
				cancel()
			} else {
				defer cancel()
			}
			req := httptest.NewRequest(http.MethodPost, "/v2/auth/oauth2/token", nil).WithContext(ctx)
			rec := httptest.NewRecorder()
			c := echo.New().NewContext(req, rec)
			oe := toOAuthError(c, logger, nil, tc.err)
			if oe.Status != tc.wantCode {
				t.Errorf("status = %d; want %d", oe.Status, tc.wantCode)
			}
			if got := bytes.Contains(logs.Bytes(), []byte("level=ERROR")); got != tc.wantError {
				t.Errorf("ERROR logged = %v; want %v (log %q)", got, tc.wantError, logs.String())
			}
		})
	}
}
