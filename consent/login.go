package consent

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/data/ident"
	"oauthd/data/password"
	"oauthd/issuer"
	"oauthd/issuer/throttle"
)

// maxLoginLen bounds the login field (an email is at most 254 bytes).
const maxLoginLen = 254

// msgWrongLogin is the one message for every failed login, so that the page
// does not reveal which logins exist.
const msgWrongLogin = "Wrong login or password."

// safeReturnTo returns v when it is a local path to the authorization
// endpoint ("/auth/oauth2/authorize?…") or to the client settings pages
// ("/settings/…", a plain path without query), and "" otherwise. Nothing
// else is ever a redirect target after login: no absolute URL, no "//host",
// no backslash tricks, no dot segments, no control characters (no open
// redirect).
func safeReturnTo(v string) string {
	if len(v) > 8192 || !utf8.ValidString(v) {
		return ""
	}
	if strings.HasPrefix(v, settingsPrefix) {
		// Already clean: no "//", "." or ".." segment, no trailing slash,
		// so the browser lands exactly on this path.
		if !settingsReturnRE.MatchString(v) || path.Clean(v) != v {
			return ""
		}
		return v
	}
	if !strings.HasPrefix(v, authorizePath+"?") && v != devicePath && !strings.HasPrefix(v, devicePath+"?") {
		return ""
	}
	for _, r := range v {
		if r < 0x21 || r == 0x7f || r == '\\' || r > 0x7e {
			return ""
		}
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || (u.Path != authorizePath && u.Path != devicePath) || u.Fragment != "" {
		return ""
	}
	return v
}

// settingsPrefix starts the paths of the client settings pages
// (consent/settings), where a login may return to.
const settingsPrefix = "/settings/"

// settingsReturnRE is the shape of a settings path that may be returned to.
var settingsReturnRE = regexp.MustCompile(`^/settings/[A-Za-z0-9_./-]{0,300}$`)

// loginURL is the login page that returns to returnTo.
func loginURL(returnTo string) string {
	if returnTo == "" {
		return loginPath
	}
	return loginPath + "?return_to=" + url.QueryEscape(returnTo)
}

// showLogin serves GET /auth/login: the form, or with a [Handover] the
// redirect to the platform's login page.
func (h *Handler) showLogin(c echo.Context) error {
	if h.handover != nil {
		return h.startHandover(c, safeReturnTo(c.QueryParam("return_to")))
	}
	v := view{
		Title:    "Sign in",
		ReturnTo: safeReturnTo(c.QueryParam("return_to")),
		CSRF:     h.loginCSRF(c),
	}
	// login_hint (OpenID Connect Core §3.1.2.1) prefills the login field;
	// the template escapes it.
	if lh := c.QueryParam("login_hint"); len(lh) <= maxLoginLen && utf8.ValidString(lh) && !strings.ContainsFunc(lh, unicode.IsControl) {
		v.Login = lh
	}
	return h.render(c, http.StatusOK, pageLogin, v, "")
}

// checkLogin serves POST /auth/login.
func (h *Handler) checkLogin(c echo.Context) error {
	if h.handover != nil {
		return h.errorPage(c, http.StatusNotFound, "Sign in at the platform",
			"Sign-in happens at the platform's own login page here. Go back to the application and sign in again.")
	}
	r := c.Request()
	ctx := r.Context()
	addr := c.RealIP()
	if err := r.ParseForm(); err != nil {
		return h.errorPage(c, http.StatusBadRequest, "Bad request", "The form could not be read.")
	}
	login := strings.TrimSpace(r.PostForm.Get("login"))
	pw := r.PostForm.Get("password")
	v := view{
		Title:    "Sign in",
		ReturnTo: safeReturnTo(r.PostForm.Get("return_to")),
		Login:    login,
	}

	// CSRF: double-submit cookie, compared in constant time.
	ck, err := r.Cookie(h.csrfName)
	if !h.sameOrigin(r) || err != nil || !equalToken(ck.Value, r.PostForm.Get(csrfField)) {
		v.CSRF = h.loginCSRF(c)
		v.Message = "Your sign-in form expired. Please try again."
		return h.render(c, http.StatusForbidden, pageLogin, v, "")
	}
	v.CSRF = ck.Value

	// The attempt is counted when its password check starts, against
	// (account, address) and the address, and given back if the password
	// is right (issuer/throttle): a flood of guesses cannot run more
	// password checks than the limit, and nothing anyone does from
	// another address can stop the user who knows the password.
	user, known, err := h.lookupLogin(c, login, pw)
	if err != nil {
		return h.internalError(c, "login", err)
	}
	ks := h.loginKeys(user, known, login, throttle.ParseAddr(addr))
	ok, upgraded, wait, err := h.rationedCheck(c, ks, user, known, pw)
	switch {
	case errors.Is(err, throttle.ErrLimited):
		return h.throttled(c, v, addr, wait)
	case err != nil:
		return h.loginBusy(c, v, addr, err)
	}
	if !ok {
		h.log.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("event", "login_failed"),
			slog.Int64("user_id", user.ID), slog.String("remote_addr", addr))
		v.Message = msgWrongLogin
		return h.render(c, http.StatusUnauthorized, pageLogin, v, "")
	}
	if user.Disabled {
		h.log.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("event", "login_refused_disabled"),
			slog.Int64("user_id", user.ID), slog.String("remote_addr", addr))
		return h.errorPage(c, http.StatusForbidden, "Account disabled",
			"Your account is disabled. Ask the administrator of the platform if you think this is a mistake.")
	}
	if upgraded != "" {
		h.upgradeHash(ctx, user, upgraded)
	}
	return h.openSession(c, user, "login_succeeded", v.ReturnTo, h.now())
}

// rationedCheck runs the password check of a login attempt within its
// rations: the failure limits of its keys ks and the gate of the checks
// running at once. It reports whether pw is right (the attempt counts as
// a failure under ks when it is not, and gives its place back when it is)
// and, right, the upgraded hash of a weaker one (or ""). An error wrapping
// [throttle.ErrLimited] says the keys are limited for wait; any other,
// that the check found no slot: then the attempt is not counted.
func (h *Handler) rationedCheck(c echo.Context, ks throttle.Keys, user data.User, known bool, pw string) (ok bool, upgraded string, wait time.Duration, err error) {
	ctx := c.Request().Context()
	// A limited key is refused before it can queue for a password check.
	if wait, ok := h.limiter.Check(ctx, ks); !ok {
		return false, "", wait, throttle.ErrLimited
	}
	// At most a few password checks run at once (19 MiB each); past a
	// short queue the login is turned away with 503 and is not counted.
	_, queued := data.StartSpan(ctx, tracer, "", "password slot wait")
	err = h.gate.Enter(ctx)
	data.EndSpan(queued, err)
	if err != nil {
		return false, "", 0, err
	}
	leave := sync.OnceFunc(h.gate.Leave) // after the check, and on every return
	defer leave()
	// Counted only once the check has its slot, so that attempts queued
	// for a slot hold no budget; attempts in flight do, and one that finds
	// the rest of the budget held by them waits for them to end (a right
	// password gives its place back): right passwords never refuse each
	// other.
	res, wait, err := h.limiter.Reserve(ctx, ks, loginReserveWait)
	if err != nil {
		return false, "", wait, err
	}
	defer res.Refund() // a no-op after Fail; ends the attempt on a panic
	_, check := data.StartSpan(ctx, tracer, "", "password check")
	ok = h.checkPassword(c, user, known, pw)
	upgraded = upgradedHash(ok, user, pw)
	check.End()
	leave()
	if !ok {
		res.Fail()
		return false, "", 0, nil
	}
	res.Refund()
	return true, upgraded, 0, nil
}

// loginKeys are the failure-limit keys of a login attempt: the account's
// at addr (or, for an unknown login, the login's, every spelling of it one
// key) and the address's.
func (h *Handler) loginKeys(user data.User, known bool, login string, ip netip.Addr) throttle.Keys {
	var ks throttle.Keys
	if known {
		ks.Add(throttle.UserKey(user.ID, ip))
	} else {
		ks.Add(h.limiter.NameKey(throttle.Login, ident.Key(login), ip))
	}
	ks.Add(throttle.AddrKey(ip))
	return ks
}

// loginBusy turns a login away with 503 when no password check can start
// soon; the attempt is not counted.
func (h *Handler) loginBusy(c echo.Context, v view, addr string, err error) error {
	h.log.LogAttrs(c.Request().Context(), slog.LevelWarn, "login_busy", slog.String("remote_addr", addr), slog.Any("err", err))
	c.Response().Header().Set("Retry-After", strconv.Itoa(busyRetryAfter))
	v.Message = "The server is busy. Please try again in a moment."
	return h.render(c, http.StatusServiceUnavailable, pageLogin, v, "")
}

// upgradedHash is the new hash of a weaker (imported) one, made at the
// first successful login with the password check's slot (the new hash
// costs what a check does), or "".
func upgradedHash(ok bool, user data.User, pw string) string {
	if !ok || user.Disabled || !password.Upgradable(user.PasswordHash, pw) {
		return ""
	}
	hash, err := password.Hash(pw)
	if err != nil {
		return ""
	}
	return hash
}

// upgradeHash replaces the user's weaker (imported) hash by upgraded,
// made from the password that just verified, unless the hash changed
// meanwhile. A failure is logged only: the login stands.
func (h *Handler) upgradeHash(ctx context.Context, user data.User, upgraded string) {
	_, err := h.store.UpdateUser(ctx, user.ID, func(u data.User) (data.User, error) {
		if u.PasswordHash == user.PasswordHash {
			u.PasswordHash = upgraded
		}
		return u, nil
	})
	if err != nil {
		h.log.WarnContext(ctx, "upgrade password hash", slog.Int64("user_id", user.ID), slog.Any("err", err))
		return
	}
	h.log.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("event", "password_hash_upgraded"), slog.Int64("user_id", user.ID))
}

// openSession opens a fresh session for user, whichever way they logged
// in, and sends the browser on to returnTo (a checked local path) or the
// signed-in page.
func (h *Handler) openSession(c echo.Context, user data.User, event, returnTo string, authTime time.Time) error {
	r := c.Request()
	ctx := r.Context()
	// A fresh session ID on every login (no session fixation); the previous
	// session of this browser, if any, is deleted.
	if old, err := r.Cookie(h.sessionName); err == nil && wellFormed(old.Value, data.PrefixSession) {
		if err := h.store.DeleteSession(ctx, data.Hash(old.Value)); err != nil && !errors.Is(err, data.ErrNotFound) {
			return h.internalError(c, "delete old session", err)
		}
	}
	id, _, err := h.newSession(ctx, user.ID, authTime)
	if errors.Is(err, data.ErrUserDisabled) {
		return h.errorPage(c, http.StatusForbidden, "Account disabled",
			"Your account is disabled. Ask the administrator of the platform if you think this is a mistake.")
	}
	if err != nil {
		return h.internalError(c, "login", err)
	}
	h.setSessionCookie(c, id)
	h.log.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("event", event),
		slog.Int64("user_id", user.ID), slog.String("remote_addr", c.RealIP()))
	if returnTo != "" {
		return seeOther(c, returnTo)
	}
	return h.render(c, http.StatusOK, pageLoggedIn, view{Title: "Signed in", User: user}, "")
}

// throttled renders the 429 of a login whose limit is reached.
func (h *Handler) throttled(c echo.Context, v view, addr string, wait time.Duration) error {
	secs := int(math.Ceil(wait.Seconds()))
	h.log.LogAttrs(c.Request().Context(), slog.LevelWarn, "audit", slog.String("event", "login_throttled"),
		slog.String("remote_addr", addr))
	c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	v.Retry = secs
	v.Message = "Too many failed sign-in attempts. Please wait " + humanSeconds(secs) + " and try again."
	return h.render(c, http.StatusTooManyRequests, pageLogin, v, "")
}

// loginReserveWait is how long a login with its password check slot waits
// for other attempts in flight under its keys to end.
const loginReserveWait = 2 * time.Second

// busyRetryAfter is the Retry-After (seconds) of a login turned away
// because every password check slot was taken.
const busyRetryAfter = 1

// lookupLogin finds the user that login names (email or username, any
// case). known is false when the login is malformed or names no user.
func (h *Handler) lookupLogin(c echo.Context, login, pw string) (user data.User, known bool, err error) {
	if login == "" || pw == "" || len(login) > maxLoginLen || len(pw) > password.MaxLength {
		return data.User{}, false, nil
	}
	user, err = h.store.GetUserByLogin(c.Request().Context(), login)
	if errors.Is(err, data.ErrNotFound) {
		return data.User{}, false, nil
	}
	if err != nil {
		return data.User{}, false, err
	}
	return user, true, nil
}

// checkPassword verifies pw against the known user's hash. When there is
// no such user (or the hash is unusable) it spends the time of one
// verification all the same, so that timing does not reveal which logins
// exist. Call it between h.gate.Enter and Leave.
func (h *Handler) checkPassword(c echo.Context, user data.User, known bool, pw string) bool {
	if !known {
		password.DummyVerify(pw)
		return false
	}
	ok, err := password.Verify(user.PasswordHash, pw)
	if err != nil {
		// A user without a usable hash cannot log in; say so in the log
		// only, and spend the usual time so the response looks the same.
		password.DummyVerify(pw)
		h.log.WarnContext(c.Request().Context(), "unusable password hash",
			slog.Int64("user_id", user.ID), slog.Any("err", err))
		return false
	}
	return ok
}

// logoutFailed answers a sign-out the store could not carry out. In an
// outage the browser still forgets its session (a person signing out of a
// shared computer must not leave it signed in because the database was
// away; clearing one's own cookie needs no CSRF token, but a cross-origin
// POST clears nothing) and the 503 page says that the session itself ends
// when it expires or at a sign-out once the service is back.
func (h *Handler) logoutFailed(c echo.Context, err error) error {
	if !issuer.Unavailable(err) || !h.sameOrigin(c.Request()) {
		return h.internalError(c, "logout", err)
	}
	h.setSessionCookie(c, "")
	h.outage.Refused(c.Request().Context(), err)
	c.Response().Header().Set("Retry-After", strconv.Itoa(issuer.RetryAfterUnavailable))
	return h.errorPage(c, http.StatusServiceUnavailable, "Signed out of this browser",
		"This browser no longer holds your sign-in. The service cannot reach its database right now, so the sign-in itself ends when it expires; to end it at once, sign in and out again in a moment.")
}

// humanSeconds renders a wait for the throttling message.
func humanSeconds(s int) string {
	if s <= 60 {
		return strconv.Itoa(s) + " seconds"
	}
	m := (s + 59) / 60
	return strconv.Itoa(m) + " minutes"
}

// logout serves POST /auth/logout. With a live session it needs the
// session's CSRF token; it deletes the session and clears the cookie.
func (h *Handler) logout(c echo.Context) error {
	r := c.Request()
	ctx := r.Context()
	if err := r.ParseForm(); err != nil {
		return h.errorPage(c, http.StatusBadRequest, "Bad request", "The form could not be read.")
	}
	if isRPLogout(r.PostForm) {
		return h.rpLogout(c, r.PostForm)
	}
	returnTo := safeReturnTo(r.PostForm.Get("return_to"))
	s, _, err := h.session(ctx, r)
	switch {
	case errors.Is(err, errNoSession):
		h.setSessionCookie(c, "")
	case err != nil:
		return h.logoutFailed(c, err)
	default:
		if !h.sameOrigin(r) || !equalToken(s.CSRF, r.PostForm.Get(csrfField)) {
			return h.errorPage(c, http.StatusForbidden, "Request refused",
				"This sign-out request did not come from this site's page. Nothing was changed.")
		}
		if err := h.store.DeleteSession(ctx, s.Hash); err != nil && !errors.Is(err, data.ErrNotFound) {
			return h.logoutFailed(c, err)
		}
		h.setSessionCookie(c, "")
		h.log.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("event", "logout"),
			slog.Int64("user_id", s.UserID), slog.String("remote_addr", c.RealIP()))
	}
	if returnTo != "" {
		return seeOther(c, loginURL(returnTo))
	}
	return h.render(c, http.StatusOK, pageLoggedOut, view{Title: "Signed out"}, "")
}
