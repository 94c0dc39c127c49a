package settings

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"oauthd/issuer/admin"
)

// createClient serves POST /settings/clients/new.
func (h *Handler) createClient(c echo.Context, rq request) error {
	r := c.Request()
	ctx := r.Context()
	scopes := formScopes(r)
	grantTypes := r.PostForm["grant_type"] // none: the default grant types
	form := clientForm{
		Name:         strings.TrimSpace(r.PostForm.Get("name")),
		Public:       r.PostForm.Get("client_type") == "public",
		RedirectURIs: r.PostForm.Get("redirect_uris"),
		Groups:       choices(scopes),
		GrantTypes:   grantChoices(grantTypes),
		JWKSURI:      strings.TrimSpace(r.PostForm.Get("jwks_uri")),
	}
	v := view{Title: "Register a new client", User: rq.u, CSRF: rq.s.CSRF, S: &settingsView{Form: form}}
	switch ct := r.PostForm.Get("client_type"); {
	case ct != "public" && ct != "confidential":
		v.Message = "Choose the client type: confidential (a server that can keep a secret) or public (an app in the browser or on a device)."
		return h.settingsRender(c, http.StatusBadRequest, pageClientNew, v)
	case len(scopes) == 0:
		// admin refuses this too; its message names a command-line flag.
		v.Message = "Choose at least one scope."
		return h.settingsRender(c, http.StatusBadRequest, pageClientNew, v)
	}
	created, err := h.clients.CreateClient(ctx, admin.NewClient{
		OwnerID: rq.u.ID, Name: form.Name, RedirectURIs: splitLines(form.RedirectURIs),
		Scopes: scopes, Public: form.Public, GrantTypes: grantTypes, JWKSURI: form.JWKSURI,
	})
	if err != nil {
		msg, status, ok := userMessage(err)
		if !ok {
			return h.site.InternalError(c, "create client", err)
		}
		v.Message = msg
		return h.settingsRender(c, status, pageClientNew, v)
	}
	h.log.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("event", "settings_client_created"),
		slog.Int64("user_id", rq.u.ID), slog.String("client_id", created.ClientID))
	v.Title = "Client registered"
	v.S = &settingsView{Created: &created}
	return h.settingsRender(c, http.StatusOK, pageClientMade, v)
}
