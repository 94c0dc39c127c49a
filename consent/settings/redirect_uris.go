package settings

import (
	"github.com/labstack/echo/v4"

	"oauthd/issuer/admin"
)

// saveRedirectURIs serves POST /settings/clients/:id/redirect-uris.
func (h *Handler) saveRedirectURIs(c echo.Context, rq request) error {
	text := c.Request().PostForm.Get("redirect_uris")
	uris := splitLines(text)
	if uris == nil {
		uris = []string{} // none: refused by the rules, with their sentence
	}
	res, err := h.clients.EditClient(c.Request().Context(), rq.cv.ClientID, admin.ClientEdit{RedirectURIs: uris})
	if err != nil {
		return h.failed(c, "set redirect URIs", err, rq, "uris", func(sv *settingsView) { sv.Form.RedirectURIs = text })
	}
	if res.Pending && res.Client.PendingChange != nil && len(res.Client.PendingChange.AddRedirectURIs) > 0 {
		return done(c, rq.cv.ClientID, "change_pending")
	}
	return done(c, rq.cv.ClientID, "redirect_uris_saved")
}
