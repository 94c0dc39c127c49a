package settings

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// generateSecret serves POST /settings/clients/:id/secrets. The new secret
// is shown once, on this response (never through a redirect).
func (h *Handler) generateSecret(c echo.Context) error {
	s, u, cv, ok, err := h.clientAction(c, "client_secret_generate")
	if !ok {
		return err
	}
	ctx := c.Request().Context()
	created, err := h.clients.GenerateSecret(ctx, cv.ClientID)
	if err != nil {
		return h.failed(c, "generate secret", err, u, s, cv, "secrets", nil)
	}
	if cv2, err := h.clients.ShowClient(ctx, cv.ClientID); err == nil {
		cv = cv2
	} else {
		return h.site.InternalError(c, "show client", err)
	}
	return h.detail(c, http.StatusOK, u, s, cv, func(sv *settingsView) { sv.NewSecret = &created })
}
