package settings

import (
	"github.com/labstack/echo/v4"

	"oauthd/issuer/admin"
)

// saveGrantTypes serves POST /settings/clients/:id/grant-types: the grant
// types the owner wants. On an approved client a removed one applies at
// once and an added one waits for review, like a scope.
func (h *Handler) saveGrantTypes(c echo.Context, rq request) error {
	r := c.Request()
	gts := r.PostForm["grant_type"]
	if len(gts) == 0 {
		gts = []string{""} // admin says to give at least one
	}
	res, err := h.clients.EditClient(r.Context(), rq.cv.ClientID, admin.ClientEdit{GrantTypes: gts})
	if err != nil {
		return h.failed(c, "set grant types", err, rq, "grant_types", nil)
	}
	if p := res.Client.PendingChange; res.Pending && p != nil && len(p.AddGrantTypes) > 0 {
		return done(c, rq.cv.ClientID, "change_pending")
	}
	return done(c, rq.cv.ClientID, "grant_types_saved")
}
