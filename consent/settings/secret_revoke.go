package settings

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// revokeSecret serves POST /settings/clients/:id/secrets/revoke.
func (h *Handler) revokeSecret(c echo.Context) error {
	s, u, cv, ok, err := h.clientAction(c, "client_secret_revoke")
	if !ok {
		return err
	}
	sid := strings.TrimSpace(c.Request().PostForm.Get("secret_id"))
	if sid == "" || len(sid) > 100 {
		return h.detail(c, http.StatusBadRequest, u, s, cv, func(sv *settingsView) {
			sv.Error, sv.msg = "secrets", "Choose the secret to revoke."
		})
	}
	if err := h.clients.RevokeSecret(c.Request().Context(), cv.ClientID, sid); err != nil {
		return h.failed(c, "revoke secret", err, u, s, cv, "secrets", nil)
	}
	return done(c, cv.ClientID, "secret_revoked")
}
