package issuer

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/data/oauth"
	"oauthd/data/scope"
	"oauthd/issuer/throttle"
	"oauthd/keys/verify"
)

// The device authorization grant (RFC 8628), in one place:
//   - POST /v2/auth/oauth2/device_authorization authenticates the client
//     as the token endpoint does (a public client sends its client_id),
//     checks that it may use the grant and the scopes (within its
//     reviewed ones), and stores a data.DeviceCode: the user code, the
//     device_code's key (never the device_code), the client, the scopes,
//     a short lifetime (DeviceCodeTTL) and the polling interval.
//   - That is the one write an unauthenticated caller can cause (a public
//     client's ID is public), so it is bounded three ways: per source
//     address and per client (deviceLimits, shared by the replicas when
//     Config.Throttle is set), and a cap on the client's outstanding codes
//     (Config.DeviceCodeMax) checked in the store's transaction, so it
//     holds on every replica. The collector sweeps expired codes.
//   - The user confirms on {app_url}/device (package consent): the code
//     is looked up (DeviceRequest), and Allow stores the consent grant and
//     an authorization code under the device code's key, then marks the
//     device code approved (ApproveDevice); Deny marks it denied.
//   - The device polls the token endpoint (deviceGrant): a device code of
//     another client, or one that is not ours, is invalid_grant;
//     authorization_pending while pending; slow_down (and 5 s more
//     interval, kept in the record on every replica) when it polls
//     faster than its interval; access_denied; expired_token; then the
//     approval's code is redeemed like an authorization code
//     (redeemCode): exactly one poll gets the tokens.

const (
	devicePath = "/v2/auth/oauth2/device_authorization"
	// DeviceCodeTTL is a device code's lifetime (RFC 8628 §3.2 expires_in).
	DeviceCodeTTL = 10 * time.Minute
	// deviceInterval is the first polling interval, in seconds; slow_down
	// adds deviceSlowDown (RFC 8628 §3.5).
	deviceInterval = 5
	deviceSlowDown = 5
	// DefaultDeviceCodeMax is Config.DeviceCodeMax's default.
	DefaultDeviceCodeMax = 1000
)

// deviceLimits bound the device-code requests: per source address 20 at
// once then one every 6 s; per client (all addresses together) 200 at
// once then 5 a second.
var deviceLimits = throttle.Rules{
	throttle.Addr:   {Burst: 20, Every: 6 * time.Second},
	throttle.Client: {Burst: 200, Every: 200 * time.Millisecond},
}

// The token endpoint's device errors (RFC 8628 §3.5): all 400.
var (
	errAuthorizationPending = &Error{Code: oauth.AuthorizationPending, Status: http.StatusBadRequest}
	errSlowDown             = &Error{Code: oauth.SlowDown, Status: http.StatusBadRequest}
	errDeviceAccessDenied   = &Error{Code: oauth.AccessDenied, Status: http.StatusBadRequest}
	errExpiredToken         = &Error{Code: oauth.ExpiredToken, Status: http.StatusBadRequest}
)

func newDeviceLimiter(cfg Config) *throttle.Limiter {
	return throttle.New(throttle.Config{Name: "device", Rules: deviceLimits, Shared: cfg.Throttle, Now: cfg.Now, Registerer: cfg.Registerer})
}

// deviceAuthResponse is RFC 8628 §3.2's answer.
type deviceAuthResponse struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	ExpiresIn               int64  `json:"expires_in"`
	Interval                int    `json:"interval"`
}

func (s *Server) handleDeviceAuthorization(c echo.Context) error {
	resp, err := s.deviceAuthorize(c)
	if err != nil {
		return writeOAuthError(c, toOAuthError(c, s.log, s.cfg.Outage, err))
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, resp)
}

func (s *Server) deviceAuthorize(c echo.Context) (deviceAuthResponse, error) {
	ctx := c.Request().Context()
	req, perr := parseTokenRequest(c.Request())
	if perr != nil {
		return deviceAuthResponse{}, perr
	}
	client, err := s.authenticateClient(ctx, c, &req)
	if err != nil {
		return deviceAuthResponse{}, err
	}
	if !client.AllowsGrant(data.GrantDeviceCode) {
		return deviceAuthResponse{}, WithDescription(ErrUnauthorizedClient, "the client may not use the device authorization grant; its owner adds the grant type %s (reviewed like a scope)", data.GrantDeviceCode)
	}
	scopes, e := reviewedScopes(client, req.Scope, false)
	if e != nil {
		return deviceAuthResponse{}, e
	}
	var ks throttle.Keys
	ks.Add(throttle.AddrKey(throttle.ParseAddr(c.RealIP())))
	ks.Add(s.device.NameKey(throttle.Client, client.ID, netip.Addr{}))
	if wait, ok := s.device.Check(ctx, ks); !ok {
		return deviceAuthResponse{}, tooManyPushes(wait, "too many device code requests from this address or for this client")
	}
	s.device.Fail(ctx, ks) // counts the request
	now := s.now().UTC()
	for range 5 {
		uc := data.NewUserCode()
		dc := data.NewDeviceCode(uc, now)
		d := data.DeviceCode{UserCode: uc, Hash: data.DeviceCodeKey(dc), ClientID: client.ID, Scopes: scopes,
			CreatedAt: now, ExpiresAt: now.Add(DeviceCodeTTL), Interval: deviceInterval, State: data.DevicePending}
		err := s.store.CreateDeviceCode(ctx, d, s.cfg.DeviceCodeMax)
		switch {
		case errors.Is(err, data.ErrExists):
			continue // a user code in use: draw another
		case errors.Is(err, data.ErrTooManyDeviceCodes):
			e := WithDescription(ErrTooManyRequests, "the client has %d device codes waiting for their users; retry after %d seconds", s.cfg.DeviceCodeMax, int(DeviceCodeTTL/time.Second))
			e.retryAfter = int(DeviceCodeTTL / time.Second)
			return deviceAuthResponse{}, e
		case err != nil:
			return deviceAuthResponse{}, fmt.Errorf("device authorization: %w", err)
		}
		shown := data.ShowUserCode(uc)
		return deviceAuthResponse{
			DeviceCode:              dc,
			UserCode:                shown,
			VerificationURI:         s.cfg.AppURL + "/device",
			VerificationURIComplete: s.cfg.AppURL + "/device?user_code=" + url.QueryEscape(shown),
			ExpiresIn:               int64(DeviceCodeTTL / time.Second),
			Interval:                deviceInterval,
		}, nil
	}
	return deviceAuthResponse{}, errors.New("device authorization: no free user code after 5 draws")
}

// devicePoll is what a poll's update of the device code decided.
type devicePoll int

const (
	pollBad devicePoll = iota
	pollOtherClient
	pollExpired
	pollDenied
	pollSlowDown
	pollPending
	pollApproved
)

// deviceGrant runs a poll of the token endpoint with a device code (RFC
// 8628 §3.4, §3.5).
func (s *Server) deviceGrant(ctx context.Context, c echo.Context, client data.Client, req *tokenRequest, proof *verify.Proof) (tokenResponse, error) {
	dc := req.Form.Get("device_code")
	uc := data.DeviceCodeUser(dc)
	bad := WithDescription(ErrInvalidGrant, "the device code is invalid")
	if uc == "" {
		return tokenResponse{}, bad
	}
	key := data.DeviceCodeKey(dc)
	now := s.now().UTC()
	var outcome devicePoll
	d, err := s.store.UpdateDeviceCode(ctx, uc, func(d data.DeviceCode) (data.DeviceCode, error) {
		switch {
		case subtle.ConstantTimeCompare(d.Hash, key) != 1:
			outcome = pollBad
			return d, bad
		case d.ClientID != client.ID:
			outcome = pollOtherClient
			return d, bad
		case !now.Before(d.ExpiresAt):
			outcome = pollExpired
			return d, bad
		case d.State == data.DeviceDenied:
			outcome = pollDenied
			return d, bad
		}
		interval := time.Duration(d.Interval) * time.Second
		if !d.LastPoll.IsZero() && now.Sub(d.LastPoll) < interval-time.Second/2 {
			// Faster than the interval: 5 s more from now on (§3.5).
			outcome = pollSlowDown
			d.Interval += deviceSlowDown
		} else if d.State == data.DeviceApproved {
			outcome = pollApproved
		} else {
			outcome = pollPending
		}
		d.LastPoll = now
		return d, nil
	})
	switch {
	case errors.Is(err, data.ErrNotFound):
		// Swept by the collector after it expired: say so, as before
		// (the time characters are not secret; anyone may write them).
		if made, ok := data.DeviceCodeTime(dc); ok && !now.Before(made.Add(DeviceCodeTTL)) {
			return tokenResponse{}, WithDescription(errExpiredToken, "the device code expired; start again with a new one")
		}
		return tokenResponse{}, bad
	case err != nil && outcome == pollBad, err != nil && outcome == pollOtherClient:
		if errors.Is(err, bad) {
			return tokenResponse{}, bad
		}
		return tokenResponse{}, fmt.Errorf("device grant: %w", err)
	case err != nil && outcome == pollExpired && errors.Is(err, bad):
		return tokenResponse{}, WithDescription(errExpiredToken, "the device code expired; start again with a new one")
	case err != nil && outcome == pollDenied && errors.Is(err, bad):
		return tokenResponse{}, WithDescription(errDeviceAccessDenied, "the user denied the request")
	case err != nil:
		return tokenResponse{}, fmt.Errorf("device grant: %w", err)
	}
	switch outcome {
	case pollSlowDown:
		return tokenResponse{}, WithDescription(errSlowDown, "polling faster than the interval; poll every %d seconds", d.Interval)
	case pollPending:
		return tokenResponse{}, WithDescription(errAuthorizationPending, "the user has not answered yet")
	}
	return s.redeemCode(ctx, c, client, proof, key, true, nil, func(code data.AuthCode, now time.Time) *Error {
		if code.ClientID != client.ID || !now.Before(code.ExpiresAt) {
			return WithDescription(errExpiredToken, "the device code expired; start again with a new one")
		}
		return nil
	})
}

// DeviceRequest is a pending device authorization as the /device page
// shows it.
type DeviceRequest struct {
	UserCode string // canonical
	Client   data.Client
	Scopes   []string
}

// ErrDeviceCode is returned by [Server.DeviceRequest] and the decisions
// for a user code that names no pending, unexpired device authorization.
var ErrDeviceCode = errors.New("no pending device authorization has this code")

// FindDevice returns the pending device authorization of what the user
// typed (case, dashes and spaces ignored), or ErrDeviceCode.
func (s *Server) FindDevice(ctx context.Context, typed string) (DeviceRequest, error) {
	dr, _, err := s.findDevice(ctx, typed)
	return dr, err
}

// findDevice is [Server.FindDevice], and returns the stored device code
// too (ApproveDevice makes its authorization code from it).
func (s *Server) findDevice(ctx context.Context, typed string) (DeviceRequest, data.DeviceCode, error) {
	uc := data.CanonicalUserCode(typed)
	if uc == "" {
		return DeviceRequest{}, data.DeviceCode{}, ErrDeviceCode
	}
	d, err := s.store.GetDeviceCode(ctx, uc)
	switch {
	case errors.Is(err, data.ErrNotFound):
		return DeviceRequest{}, data.DeviceCode{}, ErrDeviceCode
	case err != nil:
		return DeviceRequest{}, data.DeviceCode{}, err
	case d.State != data.DevicePending || !s.now().Before(d.ExpiresAt):
		return DeviceRequest{}, data.DeviceCode{}, ErrDeviceCode
	}
	client, err := s.store.GetClient(ctx, d.ClientID)
	switch {
	case errors.Is(err, data.ErrNotFound):
		return DeviceRequest{}, data.DeviceCode{}, ErrDeviceCode
	case err != nil:
		return DeviceRequest{}, data.DeviceCode{}, err
	case client.Status != data.StatusApproved:
		return DeviceRequest{}, data.DeviceCode{}, ErrDeviceCode
	}
	return DeviceRequest{UserCode: uc, Client: client, Scopes: d.Scopes}, d, nil
}

// ApproveDevice records the user's consent to the device authorization
// of userCode (canonical): the consent grant, an authorization code under
// the device code's key (what the device's poll redeems), then the
// device code's state. Of two decisions on one code, the first wins; the
// second gets ErrDeviceCode.
func (s *Server) ApproveDevice(ctx context.Context, userCode string, login Login) error {
	dr, d, err := s.findDevice(ctx, userCode)
	if err != nil {
		return err
	}
	now := s.now().UTC()
	areq := &AuthorizeRequest{Client: dr.Client, Scopes: d.Scopes}
	if err := s.authzRecordGrant(ctx, areq, login.UserID, now); err != nil {
		return fmt.Errorf("approve device: %w", err)
	}
	ac := data.AuthCode{Hash: d.Hash, ClientID: d.ClientID, UserID: login.UserID, Scopes: d.Scopes, CreatedAt: now, ExpiresAt: d.ExpiresAt}
	if slices.Contains(d.Scopes, scope.OpenID) {
		ac.AuthTime = login.AuthTime.UTC()
		if ac.AuthTime.IsZero() {
			ac.AuthTime = now
		}
	}
	// As every approval (ApproveLogin): the consent just written and the
	// code are checked in one step against a removal of the app.
	if err := s.store.CreateConsentedCode(ctx, ac, consentCovers(ac)); err != nil {
		switch {
		case errors.Is(err, data.ErrExists):
			return ErrDeviceCode
		case errors.Is(err, errNoConsent), errors.Is(err, data.ErrNotFound):
			return fmt.Errorf("approve device: the consent no longer covers the request (the app was removed or changed meanwhile): %w", ErrDeviceCode)
		}
		return fmt.Errorf("approve device: %w", err)
	}
	if err := s.decideDevice(ctx, dr.UserCode, login.UserID, data.DeviceApproved); err != nil {
		return err
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "audit",
		slog.String("event", "consent_granted"),
		slog.String("client_id", d.ClientID),
		slog.Int64("user_id", login.UserID),
		slog.String("scope", scope.Join(d.Scopes)),
		slog.String("grant_type", "device_code"),
	)
	return nil
}

// DenyDevice records the user's refusal of the device authorization of
// userCode (canonical): the device's next poll gets access_denied.
func (s *Server) DenyDevice(ctx context.Context, userCode string, userID int64) error {
	dr, err := s.FindDevice(ctx, userCode)
	if err != nil {
		return err
	}
	if err := s.decideDevice(ctx, dr.UserCode, userID, data.DeviceDenied); err != nil {
		return err
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "audit",
		slog.String("event", "consent_denied"),
		slog.String("client_id", dr.Client.ID),
		slog.Int64("user_id", userID),
		slog.String("grant_type", "device_code"),
	)
	return nil
}

func (s *Server) decideDevice(ctx context.Context, uc string, userID int64, state data.DeviceState) error {
	errDecided := errors.New("decided")
	_, err := s.store.UpdateDeviceCode(ctx, uc, func(d data.DeviceCode) (data.DeviceCode, error) {
		if d.State != data.DevicePending {
			return d, errDecided
		}
		d.State, d.UserID = state, userID
		return d, nil
	})
	switch {
	case errors.Is(err, errDecided), errors.Is(err, data.ErrNotFound):
		return ErrDeviceCode
	case err != nil:
		return fmt.Errorf("device decision: %w", err)
	}
	return nil
}
