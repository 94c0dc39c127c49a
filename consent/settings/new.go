package settings

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// newClientForm serves GET /settings/clients/new.
func (h *Handler) newClientForm(c echo.Context) error {
	s, u, ok, err := h.settingsSession(c, newClientPath)
	if !ok {
		return err
	}
	sv := &settingsView{Form: clientForm{Groups: choices(nil)}}
	return h.settingsRender(c, http.StatusOK, pageClientNew, view{Title: "Register a new client", User: u, CSRF: s.CSRF, S: sv})
}
