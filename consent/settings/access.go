package settings

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/issuer/admin"
)

// owns reports whether the client belongs to user (owner is the email).
func owns(c admin.ClientView, u data.User) bool {
	return u.Email != "" && strings.EqualFold(strings.TrimSpace(c.Owner), u.Email)
}

// errForeign stands for "no such client, or not yours": both get the same
// 404 page.
var errForeign = errors.New("client not found or not owned")

// settingsSession returns the session and user, or writes the response
// (303 to the login page, or a 500 page) and returns ok false.
func (h *Handler) settingsSession(c echo.Context, returnTo string) (data.Session, data.User, bool, error) {
	s, u, ok, err := h.site.SignedIn(c, returnTo)
	if !ok {
		return s, u, false, err
	}
	// The admin operations' audit records name the developer who acted.
	r := c.Request()
	c.SetRequest(r.WithContext(admin.WithActor(r.Context(), admin.Actor{
		Via: "settings_page", UID: -1, User: u.ID, RemoteAddr: c.RealIP(),
	})))
	return s, u, true, nil
}

// ownClient loads client id when user owns it; otherwise errForeign.
func (h *Handler) ownClient(ctx context.Context, id string, u data.User) (admin.ClientView, error) {
	if id == "" || len(id) > 200 {
		return admin.ClientView{}, errForeign
	}
	cv, err := h.clients.ShowClient(ctx, id)
	if errors.Is(err, data.ErrNotFound) {
		return admin.ClientView{}, errForeign
	}
	if err != nil {
		return admin.ClientView{}, err
	}
	if !owns(cv, u) {
		return admin.ClientView{}, errForeign
	}
	return cv, nil
}

// notFoundPage is the one answer for a client that does not exist or
// belongs to someone else.
func (h *Handler) notFoundPage(c echo.Context) error {
	return h.site.ErrorPage(c, http.StatusNotFound, "Client not found",
		"There is no OAuth client with this ID among your clients.")
}

// checkCSRF parses the form and checks the session's CSRF token (constant
// time) and the Origin. On failure it writes the 403 page and returns false.
func (h *Handler) checkCSRF(c echo.Context, s data.Session, event string) (bool, error) {
	r := c.Request()
	if !h.site.ValidPost(r, s) {
		h.log.LogAttrs(r.Context(), slog.LevelWarn, "audit", slog.String("event", event+"_csrf_failed"),
			slog.Int64("user_id", s.UserID), slog.String("remote_addr", c.RealIP()))
		return false, h.site.ErrorPage(c, http.StatusForbidden, "Request refused",
			"This request did not come from this site's settings page, so nothing was changed. Open the page again and retry.")
	}
	return true, nil
}

// clientAction runs the common part of every POST on a client: form,
// session, CSRF, ownership. It returns ok false when it has answered.
func (h *Handler) clientAction(c echo.Context, event string) (data.Session, data.User, admin.ClientView, bool, error) {
	r := c.Request()
	id := c.Param("id")
	var cv admin.ClientView
	if err := r.ParseForm(); err != nil {
		return data.Session{}, data.User{}, cv, false, h.site.ErrorPage(c, http.StatusBadRequest, "Bad request", "The form could not be read.")
	}
	s, u, ok, err := h.settingsSession(c, clientsPath+"/"+id)
	if !ok {
		return s, u, cv, false, err
	}
	if ok, err := h.checkCSRF(c, s, event); !ok {
		return s, u, cv, false, err
	}
	cv, err = h.ownClient(r.Context(), id, u)
	if errors.Is(err, errForeign) {
		return s, u, cv, false, h.notFoundPage(c)
	}
	if err != nil {
		return s, u, cv, false, h.site.InternalError(c, event, err)
	}
	return s, u, cv, true, nil
}
