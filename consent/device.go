package consent

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/issuer"
	"oauthd/issuer/throttle"
)

// The device page (RFC 8628 §3.3): {app_url}/device. The user signs in,
// types the code the device shows (verification_uri_complete prefills it,
// but the user still presses Continue, then Allow: a link alone never
// approves anything, §5.4), sees the consent page with the device's
// client named, and allows or denies. Every POST needs the session and
// its CSRF token.
//
// Guessing user codes (§5.1) is limited per session and per address
// (deviceCodeLimits): only wrong codes count, so a user who types their
// code right is never refused, and a guesser on another session or
// address does not touch this user's budget.

const devicePath = "/device"

// DeviceAuthorizer is what the device page needs of the issuer
// (*issuer.Server has it). An Authorizer without it serves no device
// page (404).
type DeviceAuthorizer interface {
	FindDevice(ctx context.Context, typed string) (issuer.DeviceRequest, error)
	ApproveDevice(ctx context.Context, userCode string, login issuer.Login) error
	DenyDevice(ctx context.Context, userCode string, userID int64) error
}

// deviceCodeLimits bound wrong user codes: per session 5 at once then one
// every 30 s; per address 30 at once then one every 10 s. 20^8 codes with
// at most DefaultDeviceCodeMax outstanding per client keep a guess's odds
// negligible at these rates (RFC 8628 §5.1).
var deviceCodeLimits = throttle.Rules{
	throttle.Login: {Burst: 5, Every: 30 * time.Second},
	throttle.Addr:  {Burst: 30, Every: 10 * time.Second},
}

func (h *Handler) deviceAuthz() (DeviceAuthorizer, bool) {
	d, ok := h.authz.(DeviceAuthorizer)
	return d, ok
}

// showDevice serves GET /device: the login first, then the code form.
func (h *Handler) showDevice(c echo.Context) error {
	if _, ok := h.deviceAuthz(); !ok {
		return h.errorPage(c, http.StatusNotFound, "Not found", "There is no device sign-in here.")
	}
	typed := typedCode(c.QueryParam("user_code"))
	s, user, err := h.session(c.Request().Context(), c.Request())
	if errors.Is(err, errNoSession) {
		back := devicePath
		if typed != "" {
			back += "?" + url.Values{"user_code": {typed}}.Encode()
		}
		return seeOther(c, loginURL(safeReturnTo(back)))
	}
	if err != nil {
		return h.internalError(c, "device page", err)
	}
	return h.render(c, http.StatusOK, pageDevice, view{Title: "Connect a device", User: user, CSRF: s.CSRF, UserCode: typed, DeviceStep: "enter"}, "")
}

// postDevice serves POST /device: lookup (the code form), allow, deny.
func (h *Handler) postDevice(c echo.Context) error {
	dev, ok := h.deviceAuthz()
	if !ok {
		return h.errorPage(c, http.StatusNotFound, "Not found", "There is no device sign-in here.")
	}
	r := c.Request()
	ctx := r.Context()
	if err := r.ParseForm(); err != nil {
		return h.errorPage(c, http.StatusBadRequest, "Bad request", "The form could not be read.")
	}
	s, user, err := h.session(ctx, r)
	if errors.Is(err, errNoSession) {
		return seeOther(c, loginURL(devicePath))
	}
	if err != nil {
		return h.internalError(c, "device page", err)
	}
	if !h.ValidPost(r, s) {
		h.log.LogAttrs(ctx, slog.LevelWarn, "audit", slog.String("event", "device_csrf_failed"),
			slog.Int64("user_id", s.UserID), slog.String("remote_addr", c.RealIP()))
		return h.errorPage(c, http.StatusForbidden, "Request refused",
			"This did not come from this site's device page, so nothing was granted. Open the page again.")
	}
	typed := typedCode(r.PostForm.Get("user_code"))
	v := view{Title: "Connect a device", User: user, CSRF: s.CSRF, UserCode: typed, DeviceStep: "enter"}
	addr := c.RealIP()
	var ks throttle.Keys
	ks.Add(h.deviceLimiter.NameKey(throttle.Login, string(s.Hash), netip.Addr{}))
	ks.Add(throttle.AddrKey(throttle.ParseAddr(addr)))
	if wait, ok := h.deviceLimiter.Check(ctx, ks); !ok {
		secs := int(math.Ceil(wait.Seconds()))
		h.log.LogAttrs(ctx, slog.LevelWarn, "audit", slog.String("event", "device_code_throttled"),
			slog.Int64("user_id", s.UserID), slog.String("remote_addr", addr))
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		v.Message = "Too many wrong codes. Please wait " + humanSeconds(secs) + " and try again."
		return h.render(c, http.StatusTooManyRequests, pageDevice, v, "")
	}
	wrong := func() error {
		h.deviceLimiter.Fail(ctx, ks)
		h.log.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("event", "device_code_wrong"),
			slog.Int64("user_id", s.UserID), slog.String("remote_addr", addr))
		v.Message = "That code is not valid or has expired. Check the code on your device and try again."
		return h.render(c, http.StatusBadRequest, pageDevice, v, "")
	}
	dr, err := dev.FindDevice(ctx, typed)
	switch {
	case errors.Is(err, issuer.ErrDeviceCode):
		return wrong()
	case err != nil:
		return h.internalError(c, "device page", err)
	}
	v.UserCode = data.ShowUserCode(dr.UserCode)
	v.ClientName = dr.Client.Name
	switch r.PostForm.Get("action") {
	case "allow":
		err = dev.ApproveDevice(ctx, dr.UserCode, issuer.Login{UserID: s.UserID, AuthTime: s.Authenticated()})
		v.DeviceAllow = true
	case "deny":
		err = dev.DenyDevice(ctx, dr.UserCode, s.UserID)
	default:
		v.DeviceStep = "confirm"
		v.Title = "Connect " + dr.Client.Name
		v.ClientOwner = h.ownerName(ctx, dr.Client)
		v.Groups = groupScopes(dr.Scopes)
		return h.render(c, http.StatusOK, pageDevice, v, "")
	}
	switch {
	case errors.Is(err, issuer.ErrDeviceCode):
		return wrong() // decided meanwhile, or expired
	case err != nil:
		return h.internalError(c, "device decision", err)
	}
	v.DeviceStep = "done"
	return h.render(c, http.StatusOK, pageDevice, v, "")
}

// typedCode is what the page keeps of a typed user code: all of it, or
// nothing when it is longer than a user code is typed
// ([data.MaxTypedUserCode]; the code form's field holds no more).
func typedCode(s string) string {
	if len(s) > data.MaxTypedUserCode {
		return ""
	}
	return s
}
