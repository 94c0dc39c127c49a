package settings

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// revokeSecret serves POST /settings/clients/:id/secrets/revoke.
func (h *Handler) revokeSecret(c echo.Context, rq request) error {
	sid := strings.TrimSpace(c.Request().PostForm.Get("secret_id"))
	if sid == "" || len(sid) > 100 {
		return h.detail(c, http.StatusBadRequest, rq, func(sv *settingsView) {
			sv.Error, sv.msg = "secrets", "Choose the secret to revoke."
		})
	}
	if err := h.clients.RevokeSecret(c.Request().Context(), rq.cv.ClientID, sid); err != nil {
		return h.failed(c, "revoke secret", err, rq, "secrets", nil)
	}
	return done(c, rq.cv.ClientID, "secret_revoked")
}
