package settings

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// listClients serves GET /settings/clients.
func (h *Handler) listClients(c echo.Context, rq request) error {
	all, err := h.clients.ListClients(c.Request().Context(), "")
	if err != nil {
		return h.site.InternalError(c, "list clients", err)
	}
	sv := &settingsView{}
	for _, cv := range all {
		if owns(cv, rq.u) {
			sv.Clients = append(sv.Clients, cv)
		}
	}
	return h.settingsRender(c, http.StatusOK, pageClients, view{Title: "OAuth clients", User: rq.u, CSRF: rq.s.CSRF, S: sv})
}
