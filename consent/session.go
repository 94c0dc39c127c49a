package consent

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/data"
)

// Cookie names.
const (
	sessionCookie = "oauthd_session"
	// loginCSRFCookie carries the pre-session CSRF token of the login form
	// (double-submit cookie).
	loginCSRFCookie = "oauthd_csrf"
	// csrfField is the form field that carries the CSRF token.
	csrfField = "csrf_token"
	// hostPrefix is prepended to the cookie names when the pages are
	// served over https: a browser accepts a __Host- cookie only when it
	// is Secure, has Path=/ and no Domain, so no subdomain (and no
	// plain-http page) can set or shadow it (RFC 6265bis §4.1.3.2).
	hostPrefix = "__Host-"
)

// cookieNames returns the session and login-CSRF cookie names: with the
// __Host- prefix when secure.
func cookieNames(secure bool) (session, csrf string) {
	if secure {
		return hostPrefix + sessionCookie, hostPrefix + loginCSRFCookie
	}
	return sessionCookie, loginCSRFCookie
}

// tokenLen is the length of data.NewSecret("") (256 bits, base64url).
var tokenLen = len(data.NewSecret(""))

// wellFormed reports whether v looks like a token we issue: prefix plus 43
// base64url characters. It keeps junk out of the store lookups.
func wellFormed(v, prefix string) bool {
	rest, ok := strings.CutPrefix(v, prefix)
	return ok && len(rest) == tokenLen && data.IsBase64URL(rest)
}

// equalToken compares two tokens in constant time; empty never matches.
func equalToken(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// session returns the live session of the request's cookie and its user.
// errNoSession means there is none (no cookie, unknown, expired, user gone).
func (h *Handler) session(ctx context.Context, r *http.Request) (data.Session, data.User, error) {
	ck, err := r.Cookie(h.sessionName)
	if err != nil || !wellFormed(ck.Value, data.PrefixSession) {
		return data.Session{}, data.User{}, errNoSession
	}
	s, err := h.store.GetSession(ctx, data.Hash(ck.Value))
	if errors.Is(err, data.ErrNotFound) {
		return data.Session{}, data.User{}, errNoSession
	}
	if err != nil {
		return data.Session{}, data.User{}, fmt.Errorf("get session: %w", err)
	}
	if !h.now().Before(s.ExpiresAt) {
		return data.Session{}, data.User{}, errNoSession
	}
	u, err := h.store.GetUser(ctx, s.UserID)
	if errors.Is(err, data.ErrNotFound) || (err == nil && u.Disabled) {
		// A disabled user's sessions are deleted with the disabling; this
		// is the second line.
		return data.Session{}, data.User{}, errNoSession
	}
	if err != nil {
		return data.Session{}, data.User{}, fmt.Errorf("get user %d: %w", s.UserID, err)
	}
	return s, u, nil
}

var errNoSession = errors.New("no session")

// newSession stores a fresh session for userID, who authenticated at
// authTime, and returns the cookie value.
func (h *Handler) newSession(ctx context.Context, userID int64, authTime time.Time) (string, data.Session, error) {
	id := data.NewSecret(data.PrefixSession)
	now := h.now().UTC()
	s := data.Session{
		Hash:      data.Hash(id),
		UserID:    userID,
		CSRF:      data.NewSecret(""),
		CreatedAt: now,
		ExpiresAt: now.Add(h.sessionTTL),
		AuthTime:  authTime.UTC(),
	}
	if err := h.store.CreateSession(ctx, s); err != nil {
		return "", data.Session{}, fmt.Errorf("create session: %w", err)
	}
	return id, s, nil
}

// setSessionCookie sets (or, with value "", clears) the session cookie.
func (h *Handler) setSessionCookie(c echo.Context, value string) {
	ck := &http.Cookie{
		Name:     h.sessionName,
		Value:    value,
		Path:     "/",
		HttpOnly: true,
		Secure:   h.secure,
		SameSite: http.SameSiteLaxMode,
		MaxAge:   int(h.sessionTTL.Seconds()),
	}
	if value == "" {
		ck.MaxAge = -1
	}
	c.SetCookie(ck)
}

// loginCSRF returns the login form's CSRF token: the one of the request's
// oauthd_csrf cookie when it is well formed, or a new one, set as cookie.
func (h *Handler) loginCSRF(c echo.Context) string {
	if ck, err := c.Request().Cookie(h.csrfName); err == nil && wellFormed(ck.Value, "") {
		return ck.Value
	}
	v := data.NewSecret("")
	c.SetCookie(&http.Cookie{
		Name:     h.csrfName,
		Value:    v,
		Path:     h.csrfPath,
		HttpOnly: true,
		Secure:   h.secure,
		SameSite: http.SameSiteStrictMode,
	})
	return v
}
