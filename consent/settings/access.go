package settings

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/issuer/admin"
)

// owns reports whether the client belongs to user: by ID, never by email
// (an email changes hands; an unclaimed client belongs to no one).
func owns(c admin.ClientView, u data.User) bool {
	return u.ID != 0 && c.OwnerID == u.ID
}

// errForeign stands for "no such client, or not yours": both get the same
// 404 page.
var errForeign = errors.New("client not found or not owned")

// request is what a handler gets once its route's steps passed.
type request struct {
	s  data.Session
	u  data.User
	cv admin.ClientView // on a client's routes (:id): the user's own client
}

// handler is one of the pages' handlers; [Handler.guard] runs the common
// steps before it.
type handler func(c echo.Context, rq request) error

// steps are what a route checks before its handler, in this order.
type steps struct {
	// post: parse the form and, once the session is known, check its
	// CSRF token; post names the audit event of a refusal
	// (<post>_csrf_failed). "" for a GET.
	post string
	// client: the route is on client :id, which must be the user's (else
	// the 404 page); the login returns to the client's page.
	client bool
	// back is where the login returns to when the route is not on a
	// client.
	back string
}

// guard returns the route's handler: the form (a POST), the session (else
// the login page, which returns to the page), the CSRF token (a POST), the
// client's ownership (a client's route), then next.
func (h *Handler) guard(st steps, next handler) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Param("id")
		back := st.back
		if st.client {
			back = clientsPath + "/" + id
		}
		if st.post != "" {
			if err := c.Request().ParseForm(); err != nil {
				return h.site.ErrorPage(c, http.StatusBadRequest, "Bad request", "The form could not be read.")
			}
		}
		var rq request
		var ok bool
		var err error
		if rq.s, rq.u, ok, err = h.settingsSession(c, back); !ok {
			return err
		}
		if st.post != "" {
			if ok, err := h.checkCSRF(c, rq.s, st.post); !ok {
				return err
			}
		}
		if st.client {
			rq.cv, err = h.ownClient(c.Request().Context(), id, rq.u)
			if errors.Is(err, errForeign) {
				return h.notFoundPage(c)
			}
			if err != nil {
				return h.site.InternalError(c, cmp.Or(st.post, "show client"), err)
			}
		}
		return next(c, rq)
	}
}

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

// checkCSRF checks the parsed form's CSRF token against the session's
// (constant time) and the Origin. On failure it writes the 403 page and returns false.
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
