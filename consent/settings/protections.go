package settings

import (
	"github.com/labstack/echo/v4"

	"oauthd/issuer/admin"
)

// saveProtections serves POST /settings/clients/:id/protections: the
// DPoP and PAR requirements. Turning one on applies at once; turning one
// off on an approved client waits for review.
func (h *Handler) saveProtections(c echo.Context, rq request) error {
	r := c.Request()
	dpop := r.PostForm.Get("dpop_bound_access_tokens") == "on"
	par := r.PostForm.Get("require_pushed_authorization_requests") == "on"
	res, err := h.clients.EditClient(r.Context(), rq.cv.ClientID, admin.ClientEdit{DPoPBoundAccessTokens: &dpop, RequirePAR: &par})
	if err != nil {
		return h.failed(c, "set protections", err, rq, "protections", nil)
	}
	if p := res.Client.PendingChange; res.Pending && p != nil && (p.DropDPoPBoundAccessTokens || p.DropRequirePAR) {
		return done(c, rq.cv.ClientID, "change_pending")
	}
	return done(c, rq.cv.ClientID, "protections_saved")
}
