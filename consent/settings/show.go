package settings

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
)

// showClient serves GET /settings/clients/:id.
func (h *Handler) showClient(c echo.Context) error {
	id := c.Param("id")
	s, u, ok, err := h.settingsSession(c, clientsPath+"/"+id)
	if !ok {
		return err
	}
	cv, err := h.ownClient(c.Request().Context(), id, u)
	if errors.Is(err, errForeign) {
		return h.notFoundPage(c)
	}
	if err != nil {
		return h.site.InternalError(c, "show client", err)
	}
	return h.detail(c, http.StatusOK, u, s, cv, func(sv *settingsView) {
		sv.Flash = flashes[c.QueryParam("done")]
	})
}
