package settings

import (
	"net/url"
	"slices"

	"github.com/labstack/echo/v4"

	"oauthd/consent"
	"oauthd/issuer/admin"
)

// revokeApp serves POST /settings/apps/:id/revoke: the signed-in user
// removes one app's access (issuer/admin RevokeUserApp: every code and
// refresh-token family of the pair and the consent, in one transaction),
// then goes back to the page, which names the app (post/redirect/get).
// An app the user has not allowed (unknown, or someone else's) gets the
// settings pages' one 404 page.
func (h *Handler) revokeApp(c echo.Context, rq request) error {
	ctx := c.Request().Context()
	id, err := url.PathUnescape(c.Param("id"))
	if err != nil || id == "" || len(id) > 200 {
		return h.notFoundPage(c)
	}
	apps, err := h.apps.ListUserApps(ctx, userRef(rq.u))
	if err != nil {
		return h.site.InternalError(c, "app_revoke", err)
	}
	if !slices.ContainsFunc(apps, func(a admin.AppView) bool { return a.ClientID == id }) {
		return h.notFoundPage(c)
	}
	if _, err := h.apps.RevokeUserApp(ctx, userRef(rq.u), id); err != nil {
		return h.site.InternalError(c, "app_revoke", err)
	}
	q := url.Values{"removed": {id}, "check": {removedMAC(rq.s, id)}}
	return consent.SeeOther(c, appsPath+"?"+q.Encode())
}
