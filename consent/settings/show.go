package settings

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// showClient serves GET /settings/clients/:id.
func (h *Handler) showClient(c echo.Context, rq request) error {
	return h.detail(c, http.StatusOK, rq, func(sv *settingsView) {
		sv.Flash = flashes[c.QueryParam("done")]
	})
}
