package settings

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// newClientForm serves GET /settings/clients/new.
func (h *Handler) newClientForm(c echo.Context, rq request) error {
	sv := &settingsView{Form: clientForm{Groups: choices(nil), GrantTypes: grantChoices(nil)}}
	return h.settingsRender(c, http.StatusOK, pageClientNew, view{Title: "Register a new client", User: rq.u, CSRF: rq.s.CSRF, S: sv})
}
