package consent

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/consent/handover"
	"oauthd/data"
	"oauthd/data/ident"
	"oauthd/issuer/admin"
	"oauthd/issuer/throttle"
)

// Handover hands the login to the platform (docs/LOGIN-HANDOVER.md):
// with it, GET /auth/login sends the browser to LoginURL with a return_to
// and a one-time challenge, and /auth/login/handover takes the signed
// assertion back. The built-in login form is then off.
type Handover struct {
	// LoginURL is the platform's login page (absolute http(s) URL).
	LoginURL string
	// Verifier checks the assertion's signature and claims.
	Verifier AssertionVerifier
	// BaseURL is oauthd's API address (its issuer), when it differs from
	// the pages' (Config.AppURL): a sign-in started there, not at the
	// app URL, comes back without its cookie, and the refusal says so.
	// Optional.
	BaseURL string
}

// AssertionVerifier verifies a login assertion; *handover.Verifier is one.
type AssertionVerifier interface {
	Verify(ctx context.Context, token string) (handover.Assertion, error)
}

// Handover paths and cookie.
const (
	handoverPath = "/auth/login/handover"
	// handoverCookie binds a handover to the browser that started it: it
	// holds the challenge (and where to go after login). The platform sees
	// the challenge, never the cookie; an assertion is accepted only by
	// the browser holding the cookie with its challenge (no login CSRF).
	handoverCookie = "oauthd_handover"
	// handoverTTL is how long a user has to log in at the platform.
	handoverTTL = 10 * time.Minute
)

// handoverLimits bound failed assertions per source address.
var handoverLimits = throttle.Rules{
	throttle.Addr: {Burst: 20, Every: 15 * time.Second},
}

// startHandover sends the browser to the platform's login page.
func (h *Handler) startHandover(c echo.Context, returnTo string) error {
	challenge := data.NewSecret("")
	c.SetCookie(&http.Cookie{
		Name:     h.handoverName,
		Value:    challenge + "." + base64.RawURLEncoding.EncodeToString([]byte(returnTo)),
		Path:     h.csrfPath,
		HttpOnly: true,
		Secure:   h.secure,
		// Lax: the platform sends the browser back with a top-level GET
		// from its own site, which must carry the cookie.
		SameSite: http.SameSiteLaxMode,
		MaxAge:   int(handoverTTL.Seconds()),
	})
	u, _ := url.Parse(h.handover.LoginURL) // checked in New
	q := u.Query()
	q.Set("return_to", h.appURL+handoverPath)
	q.Set("challenge", challenge)
	u.RawQuery = q.Encode()
	h.log.LogAttrs(c.Request().Context(), slog.LevelInfo, "audit", slog.String("event", "login_handover_started"),
		slog.String("remote_addr", c.RealIP()))
	return seeOther(c, u.String())
}

// handoverFailure is what the user is told when an assertion is refused.
func handoverFailure(err error) (status int, title, msg string) {
	const again = " Go back to the application and sign in again."
	switch {
	case errors.Is(err, handover.ErrExpired):
		return http.StatusBadRequest, "Sign-in expired", "The sign-in response from the platform has expired (it is valid for a minute)." + again
	case errors.Is(err, handover.ErrNotYetValid):
		return http.StatusBadRequest, "Sign-in not valid yet", "The sign-in response from the platform is dated in the future; the platform's clock may be wrong." + again
	case errors.Is(err, handover.ErrLifetime):
		return http.StatusBadRequest, "Sign-in refused", "The sign-in response from the platform claims to be valid for more than a minute, which is not allowed." + again
	case errors.Is(err, handover.ErrAudience):
		return http.StatusBadRequest, "Sign-in refused", "The sign-in response was made for another service, not for this one (wrong audience)." + again
	case errors.Is(err, handover.ErrIssuer):
		return http.StatusBadRequest, "Sign-in refused", "The sign-in response does not come from the platform this service trusts (wrong issuer)." + again
	case errors.Is(err, handover.ErrSignature):
		return http.StatusBadRequest, "Sign-in refused", "The sign-in response is not signed by the platform (forged or signed with an unknown key)." + again
	case errors.Is(err, handover.ErrKeys):
		return http.StatusServiceUnavailable, "Sign-in unavailable", "The platform's signing keys could not be fetched. Please try again in a moment."
	case errors.Is(err, errHandoverChallenge):
		return http.StatusBadRequest, "Sign-in refused", "The sign-in response belongs to another sign-in than the one this browser started (wrong challenge)." + again
	case errors.Is(err, errHandoverNoCookie):
		return http.StatusBadRequest, "Sign-in refused", "This browser did not start this sign-in, or took longer than 10 minutes." + again
	case errors.Is(err, errHandoverReplay):
		return http.StatusBadRequest, "Sign-in refused", "This sign-in response was already used; each one works once." + again
	}
	return http.StatusBadRequest, "Sign-in refused", "The sign-in response from the platform could not be read." + again
}

// hostHint is what the refusal of an answer without the handover cookie
// adds when the likely cause is an address: the cookie is bound to the
// host the sign-in started on (a host-only cookie), and the platform sends
// the browser back to the app URL's host. A page opened on another host
// than the app URL's (the base URL's, say) cannot have it; an answer on
// the app URL's host lacks it when the sign-in started on the base URL's.
// The request's Host is named only when it is a plain host[:port] (it is
// the browser's to send; the page escapes it anyway).
func (h *Handler) hostHint(r *http.Request) string {
	app, err := url.Parse(h.appURL)
	if err != nil || app.Host == "" {
		return ""
	}
	appHost := strings.ToLower(app.Host)
	if got := strings.ToLower(r.Host); got != "" && got != appHost {
		where := "another address"
		if plainHost(got) {
			where = got
		}
		return " This page was opened at " + where + ", but a sign-in starts and ends at " + appHost +
			" (the application's address), and the browser keeps it for that address only: open the application at " +
			h.appURL + " and sign in there."
	}
	if h.handover.BaseURL == "" {
		return ""
	}
	base, err := url.Parse(h.handover.BaseURL)
	if err != nil || base.Host == "" || strings.EqualFold(base.Host, appHost) {
		return ""
	}
	return " If the sign-in was started at " + strings.ToLower(base.Host) + " (the API's address) rather than at " + appHost +
		", the browser kept it there: open the application's link at " + h.appURL + " and sign in again."
}

// plainHost reports whether s is a host[:port] of letters, digits, dots,
// dashes, colons and brackets, at most 255 bytes.
func plainHost(s string) bool {
	if len(s) > 255 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune(".-:[]", r)) {
			return false
		}
	}
	return true
}

var (
	errHandoverChallenge = errors.New("assertion challenge does not match the browser's")
	errHandoverNoCookie  = errors.New("no handover cookie")
	errHandoverReplay    = errors.New("assertion jti already used")
)

// finishHandover serves GET /auth/login/handover?assertion=JWT.
func (h *Handler) finishHandover(c echo.Context) error {
	r := c.Request()
	ctx := r.Context()
	addr := c.RealIP()
	var ks throttle.Keys
	ks.Add(throttle.AddrKey(throttle.ParseAddr(addr)))
	if wait, ok := h.handoverLimiter.Check(ctx, ks); !ok {
		secs := int(wait.Seconds()) + 1
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		return h.errorPage(c, http.StatusTooManyRequests, "Too many attempts",
			"Too many refused sign-in responses came from your address. Please wait "+humanSeconds(secs)+" and try again.")
	}
	a, returnTo, err := h.checkAssertion(ctx, r)
	// The cookie is spent whatever happened: a challenge works once.
	c.SetCookie(&http.Cookie{Name: h.handoverName, Value: "", Path: h.csrfPath, HttpOnly: true, Secure: h.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: -1})
	if err != nil {
		if !errors.Is(err, handover.ErrKeys) {
			h.handoverLimiter.Fail(ctx, ks)
		}
		var ee *internalErr
		if errors.As(err, &ee) {
			return h.internalError(c, "login handover", ee.err)
		}
		h.log.LogAttrs(ctx, slog.LevelWarn, "audit", slog.String("event", "login_handover_refused"),
			slog.String("remote_addr", addr), slog.String("reason", err.Error()))
		status, title, msg := handoverFailure(err)
		if errors.Is(err, errHandoverNoCookie) {
			msg += h.hostHint(r)
		}
		return h.errorPage(c, status, title, msg)
	}
	user, status, msg, err := h.provisionUser(ctx, a)
	if err != nil {
		return h.internalError(c, "login handover", err)
	}
	if status != 0 {
		h.log.LogAttrs(ctx, slog.LevelWarn, "audit", slog.String("event", "login_handover_refused"),
			slog.Int64("user_id", user.ID), slog.String("remote_addr", addr), slog.String("reason", msg))
		return h.errorPage(c, status, "Sign-in refused", msg)
	}
	// auth_time is when the platform authenticated the user: its
	// assertion's issue time (OpenID Connect Core §2).
	return h.openSession(c, user, "login_handover_succeeded", returnTo, a.IssuedAt)
}

// internalErr marks a store failure (a 500, not the assertion's fault).
type internalErr struct{ err error }

func (e *internalErr) Error() string { return e.err.Error() }
func (e *internalErr) Unwrap() error { return e.err }

// checkAssertion verifies the assertion, its challenge against the
// browser's cookie, and spends its jti.
func (h *Handler) checkAssertion(ctx context.Context, r *http.Request) (handover.Assertion, string, error) {
	a, err := h.handover.Verifier.Verify(ctx, r.URL.Query().Get("assertion"))
	if err != nil {
		return a, "", err
	}
	ck, err := r.Cookie(h.handoverName)
	if err != nil {
		return a, "", errHandoverNoCookie
	}
	challenge, rt, _ := strings.Cut(ck.Value, ".")
	if !wellFormed(challenge, "") {
		return a, "", errHandoverNoCookie
	}
	if !equalToken(challenge, a.Challenge) {
		return a, "", errHandoverChallenge
	}
	sum := sha256.Sum256([]byte("login-handover\x00" + a.Issuer + "\x00" + a.ID))
	switch err := h.store.UseNonce(ctx, sum[:], a.ExpiresAt.Add(handover.Leeway+time.Minute)); {
	case errors.Is(err, data.ErrExists):
		return a, "", errHandoverReplay
	case err != nil:
		return a, "", &internalErr{fmt.Errorf("spend assertion jti: %w", err)}
	}
	b, _ := base64.RawURLEncoding.DecodeString(rt)
	return a, safeReturnTo(string(b)), nil
}

// provisionUser finds the platform's user by its sub, creating or updating
// the record just in time. A status != 0 refuses the login with msg.
//
// The user is the one whose external ID is sub; nothing moves by email.
// An existing user (local or another sub) is never matched by email: the
// platform's assertion of an email address is not proof that the person
// owns the account with that address (account takeover if the platform
// does not verify emails). A sub asserting an email that another user
// holds (under the canonical form, ident.Key: a look-alike is the same
// email) is refused with 409 until the operator resolves it. A user whose
// email the platform changed keeps everything (clients, grants, sessions
// belong to the user's ID).
func (h *Handler) provisionUser(ctx context.Context, a handover.Assertion) (data.User, int, string, error) {
	p, status, msg := profileOf(a)
	if status != 0 {
		return data.User{}, status, msg, nil
	}
	now := h.now().UTC()
	u, err := h.store.GetUserByExternalID(ctx, a.Subject)
	switch {
	case errors.Is(err, data.ErrNotFound):
		if a.Disabled {
			return data.User{}, http.StatusForbidden, "Your account is disabled.", nil
		}
		if p.refusal != "" {
			return data.User{}, http.StatusBadRequest, p.refusal, nil
		}
		u, err = h.store.CreateUser(ctx, data.User{Email: p.email, Name: p.name, TimeZone: p.timeZone, ExternalID: a.Subject, CreatedAt: now})
		if errors.Is(err, data.ErrExists) {
			return data.User{}, http.StatusConflict, "An account with your email address already exists here and is not linked to your platform account. Ask the administrator to resolve it.", nil
		}
		if err != nil {
			return data.User{}, 0, "", fmt.Errorf("create user: %w", err)
		}
		h.log.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("event", "user_provisioned"), slog.Int64("user_id", u.ID))
		return u, 0, "", nil
	case err != nil:
		return data.User{}, 0, "", fmt.Errorf("get user by external ID: %w", err)
	}
	if u.Disabled {
		return u, http.StatusForbidden, "Your account is disabled.", nil
	}
	if a.Disabled {
		// The platform ended the account: disable it here too, which
		// revokes its sessions, grants and tokens at once.
		if _, err := h.store.UpdateUser(ctx, u.ID, func(u data.User) (data.User, error) {
			if !u.Disabled {
				u.Disabled, u.DisabledAt = true, now
			}
			return u, nil
		}); err != nil {
			return data.User{}, 0, "", fmt.Errorf("disable user: %w", err)
		}
		h.log.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("event", "user_disabled"), slog.Int64("user_id", u.ID),
			slog.String("via", "platform assertion"))
		return u, http.StatusForbidden, "Your account is disabled.", nil
	}
	if p.refusal != "" {
		return u, http.StatusBadRequest, p.refusal, nil
	}
	if u.Email != p.email || u.Name != p.name || u.TimeZone != p.timeZone {
		u, err = h.store.UpdateUser(ctx, u.ID, func(u data.User) (data.User, error) {
			u.Email, u.Name, u.TimeZone = p.email, p.name, p.timeZone
			u.ProfileUpdatedAt = now.UTC()
			return u, nil
		})
		if errors.Is(err, data.ErrExists) {
			return data.User{}, http.StatusConflict, "Your new email address is already used by another account here. Ask the administrator to resolve it.", nil
		}
		if err != nil {
			return data.User{}, 0, "", fmt.Errorf("update user: %w", err)
		}
	}
	return u, 0, "", nil
}

// assertedProfile is the profile a login handover's assertion states for
// its user, as it is stored.
type assertedProfile struct {
	email, name, timeZone string
	// refusal, when not "", refuses the login once a disabling assertion
	// has taken effect: a name or time zone that cannot be used as it is.
	refusal string
}

// profileOf reads the profile that a asserts. A status != 0 refuses the
// login at once with msg (no usable email address); p.refusal refuses it
// after a disabling assertion has taken effect.
func profileOf(a handover.Assertion) (p assertedProfile, status int, msg string) {
	email := strings.TrimSpace(a.Email)
	if ad, err := mail.ParseAddress(email); err != nil || ad.Address != email {
		return p, http.StatusBadRequest, "The platform sent no valid email address for your account."
	}
	// The rule of every other entry (users add, users import): at most 254
	// bytes, and a canonical form (no control or bidi character, a domain
	// IDNA takes), else it could show as another address.
	if err := admin.CheckEmail(email); err != nil {
		return p, http.StatusBadRequest, "The platform sent an email address for your account that cannot be used here: " + err.Error() + "."
	}
	name := strings.TrimSpace(a.Name)
	// A name that could disguise itself on the operator's screen, or that
	// shows as nothing, refuses the login (after a disabling assertion has
	// taken effect): the rule of users add (ident.Name).
	badName := ""
	if name != "" {
		if err := ident.Name(name); err != nil {
			badName = "The platform sent a name for your account that cannot be shown as it is (" +
				strings.TrimPrefix(err.Error(), ident.ErrInvalid.Error()+": ") +
				"): it could disguise itself on the administrator's screen, so the login is refused. Ask the platform to correct your name."
		}
	}
	if name == "" || len(name) > data.MaxNameLen {
		name = email
	}
	// time_zone is optional (UTC); one given must be an IANA zone name,
	// never "Local" (this server's zone) nor empty.
	tz := "UTC"
	if a.TimeZone != nil {
		tz = *a.TimeZone
		if err := admin.CheckTimeZone(tz); err != nil && badName == "" {
			badName = "The platform sent a time zone for your account that cannot be used here: " + err.Error() +
				", so the login is refused. Ask the platform to correct it, or to leave it out (UTC)."
		}
	}
	return assertedProfile{email: email, name: name, timeZone: tz, refusal: badName}, 0, ""
}
