package consent

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"oauthd/data"
)

// endSession serves GET /auth/logout, the end-session endpoint of OpenID
// Connect RP-Initiated Logout 1.0 (§2): id_token_hint,
// post_logout_redirect_uri, state, client_id. It ends oauthd's session,
// not the grants: the apps the user allowed keep their tokens.
//
//   - A valid id_token_hint naming the session's user: the session ends
//     at once, and the browser goes to post_logout_redirect_uri (with
//     state) when it is one the hint's client registered, else to the
//     logged-out page.
//   - A session of another user, or no valid hint: the user is asked
//     (the spec's MUST), by a form that posts back with the session's
//     CSRF token; then the logged-out page, never a redirect.
//   - No session: the redirect when the hint and URI allow it, else the
//     logged-out page.
//
// Whatever the parameters say, a redirect goes only to a registered
// post-logout redirect URI of the client the hint was issued to
// ([issuer.Server.CheckLogout]).
func (h *Handler) endSession(c echo.Context) error {
	return h.rpLogout(c, c.Request().URL.Query())
}

// rpLogout is the end-session logic for the parameters q (from the query
// of a GET or the form of a POST).
func (h *Handler) rpLogout(c echo.Context, q url.Values) error {
	r := c.Request()
	ctx := r.Context()
	lr, err := h.authz.CheckLogout(ctx, q)
	if err != nil {
		return h.internalError(c, "logout", err)
	}
	s, user, err := h.session(ctx, r)
	switch {
	case errors.Is(err, errNoSession):
		h.setSessionCookie(c, "")
		if lr.Redirect != "" {
			return seeOther(c, lr.Redirect)
		}
		return h.render(c, http.StatusOK, pageLoggedOut, view{Title: "Signed out"}, "")
	case err != nil:
		return h.internalError(c, "logout", err)
	}
	if lr.Subject == "" || lr.Subject != strconv.FormatInt(s.UserID, 10) {
		return h.render(c, http.StatusOK, pageLogout, view{Title: "Sign out?", User: user, CSRF: s.CSRF, AppName: lr.ClientName}, "")
	}
	if err := h.store.DeleteSession(ctx, s.Hash); err != nil && !errors.Is(err, data.ErrNotFound) {
		return h.internalError(c, "logout", err)
	}
	h.setSessionCookie(c, "")
	h.log.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("event", "logout"),
		slog.Int64("user_id", s.UserID), slog.String("client_id", lr.ClientID), slog.String("remote_addr", c.RealIP()))
	if lr.Redirect != "" {
		return seeOther(c, lr.Redirect)
	}
	return h.render(c, http.StatusOK, pageLoggedOut, view{Title: "Signed out"}, "")
}

// isRPLogout reports whether a POST to /auth/logout is an application's
// end-session request (RP-Initiated Logout 1.0 §2 allows POST) rather
// than the site's own sign-out form, which always carries a CSRF token.
func isRPLogout(form url.Values) bool {
	if form.Has(csrfField) {
		return false
	}
	return form.Has("id_token_hint") || form.Has("post_logout_redirect_uri") || form.Has("client_id")
}
