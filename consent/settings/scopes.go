package settings

import (
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"oauthd/issuer/admin"
)

// saveScopes serves POST /settings/clients/:id/scopes: for a legacy client
// this is the migration, which needs the explicit confirmation when
// requests without a scope parameter were seen recently.
func (h *Handler) saveScopes(c echo.Context, rq request) error {
	r := c.Request()
	scopes := formScopes(r)
	confirm := r.PostForm.Get("confirm") == "yes"
	section := "scopes"
	if rq.cv.Legacy {
		section = "migration"
	}
	keep := func(sv *settingsView) {
		sv.Form.Groups = choices(scopes)
		sv.Form.Confirm = confirm
	}
	fail := func(msg string) error {
		return h.detail(c, http.StatusBadRequest, rq, func(sv *settingsView) {
			sv.Error, sv.msg = section, msg
			keep(sv)
		})
	}
	if len(scopes) == 0 {
		return fail("Choose at least one scope.")
	}
	if rq.cv.Legacy && (rq.cv.MigrationSafe == nil || !*rq.cv.MigrationSafe) && !confirm {
		return fail("Authorization requests without a scope parameter were seen recently. " +
			"Confirm that your authorization URL now carries scope before saving: users opening the old URL will fail to authorize.")
	}
	res, err := h.clients.EditClient(r.Context(), rq.cv.ClientID, admin.ClientEdit{Scopes: scopes, Force: confirm})
	if err != nil {
		return h.failed(c, "set scopes", err, rq, section, keep)
	}
	code := "scopes_saved"
	if res.Pending && res.Client.PendingChange != nil && len(res.Client.PendingChange.AddScopes) > 0 {
		code = "change_pending"
	}
	if rq.cv.Legacy {
		code = "migrated"
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "audit", slog.String("event", "settings_client_migrated"),
			slog.Int64("user_id", rq.u.ID), slog.String("client_id", rq.cv.ClientID), slog.Bool("confirmed", confirm))
	}
	return done(c, rq.cv.ClientID, code)
}
