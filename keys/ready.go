package keys

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/data"
)

// ReadyTimeout bounds the store read of [Manager.Ready]: a store that does
// not answer within it (a lost PostgreSQL server, a cut network) makes the
// server not ready until it answers again.
const ReadyTimeout = 2 * time.Second

// ErrStoreUnavailable: the key store failed, or did not answer within
// [ReadyTimeout].
var ErrStoreUnavailable = errors.New("the database does not answer")

// Ready reports whether tokens can be issued now: it reads the key set
// from the store, not the manager's in-memory copy, so that readiness
// follows the store. It returns nil when the store answers within
// [ReadyTimeout] with an active key; an error wrapping
// [ErrStoreUnavailable] when it does not answer; one wrapping
// [ErrNoSigningKey] when no key is active.
func (m *Manager) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	ks, err := m.cfg.Store.ListKeys(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	for _, k := range ks {
		if k.State == data.KeyActive {
			return nil
		}
	}
	return fmt.Errorf("no active signing key: %w", ErrNoSigningKey)
}

// ServeReady is the readiness probe (GET /readyz): 200 {"status":"ready"}
// when [Manager.Ready] is nil, else 503 {"status":"unavailable","reason":…}
// with a reason that names the failed condition and nothing of its cause.
func (m *Manager) ServeReady(c echo.Context) error {
	err := m.Ready(c.Request().Context())
	if err == nil {
		return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
	}
	reason := "no active signing key"
	if errors.Is(err, ErrStoreUnavailable) {
		reason = ErrStoreUnavailable.Error()
	}
	return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": reason})
}
