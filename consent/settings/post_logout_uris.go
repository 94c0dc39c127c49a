package settings

import (
	"github.com/labstack/echo/v4"

	"oauthd/issuer/admin"
)

// savePostLogoutURIs serves POST /settings/clients/:id/post-logout-uris:
// the owner's post-logout redirect URIs (OpenID Connect RP-Initiated
// Logout), reviewed like redirect URIs: a removal applies at once, a new
// URI of an approved client waits for an administrator.
func (h *Handler) savePostLogoutURIs(c echo.Context, rq request) error {
	text := c.Request().PostForm.Get("post_logout_redirect_uris")
	uris := splitLines(text)
	if uris == nil {
		uris = []string{} // none: remove them all
	}
	res, err := h.clients.EditClient(c.Request().Context(), rq.cv.ClientID, admin.ClientEdit{PostLogoutRedirectURIs: uris})
	if err != nil {
		return h.failed(c, "set post-logout redirect URIs", err, rq, "post_logout_uris", func(sv *settingsView) { sv.Form.PostLogoutURIs = text })
	}
	if res.Pending && res.Client.PendingChange != nil && len(res.Client.PendingChange.AddPostLogoutRedirectURIs) > 0 {
		return done(c, rq.cv.ClientID, "change_pending")
	}
	return done(c, rq.cv.ClientID, "post_logout_saved")
}
