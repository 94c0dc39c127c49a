package settings

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// generateSecret serves POST /settings/clients/:id/secrets. The new secret
// is shown once, on this response (never through a redirect).
func (h *Handler) generateSecret(c echo.Context, rq request) error {
	ctx := c.Request().Context()
	created, err := h.clients.GenerateSecret(ctx, rq.cv.ClientID)
	if err != nil {
		return h.failed(c, "generate secret", err, rq, "secrets", nil)
	}
	if cv2, err := h.clients.ShowClient(ctx, rq.cv.ClientID); err == nil {
		rq.cv = cv2
	} else {
		return h.site.InternalError(c, "show client", err)
	}
	return h.detail(c, http.StatusOK, rq, func(sv *settingsView) { sv.NewSecret = &created })
}
