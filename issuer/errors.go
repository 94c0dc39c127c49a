package issuer

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"oauthd/data/oauth"
)

// Error is an OAuth 2.0 error response (RFC 6749 §5.2, §4.1.2.1; RFC 7009
// §2.2.1). Code is the registered error code, Description a sentence for the
// developer (never a secret, code or token), Status the HTTP status of the
// response and URI an optional error_uri.
type Error struct {
	Code        string
	Description string
	Status      int
	URI         string

	// retryAfter is the Retry-After of a 429, in seconds.
	retryAfter int
}

// Error returns "code: description".
func (e *Error) Error() string {
	if e.Description == "" {
		return e.Code
	}
	return e.Code + ": " + e.Description
}

// Is reports whether target is an *Error with the same Code, so that
// errors.Is(err, ErrInvalidGrant) holds for every invalid_grant whatever its
// description.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// The RFC 6749 §5.2 and §4.1.2.1 errors, RFC 7009's unsupported_token_type
// and RFC 9449's invalid_dpop_proof, with their statuses; the codes
// themselves are spelled once, in package [oauth]. Use [WithDescription]
// to add a description; never modify these values.
var (
	ErrInvalidRequest          = &Error{Code: oauth.InvalidRequest, Status: http.StatusBadRequest}
	ErrInvalidClient           = &Error{Code: oauth.InvalidClient, Status: http.StatusUnauthorized}
	ErrInvalidGrant            = &Error{Code: oauth.InvalidGrant, Status: http.StatusBadRequest}
	ErrUnauthorizedClient      = &Error{Code: oauth.UnauthorizedClient, Status: http.StatusBadRequest}
	ErrUnsupportedGrantType    = &Error{Code: oauth.UnsupportedGrantType, Status: http.StatusBadRequest}
	ErrInvalidScope            = &Error{Code: oauth.InvalidScope, Status: http.StatusBadRequest}
	ErrAccessDenied            = &Error{Code: oauth.AccessDenied, Status: http.StatusForbidden}
	ErrUnsupportedResponseType = &Error{Code: oauth.UnsupportedResponseType, Status: http.StatusBadRequest}
	ErrServerError             = &Error{Code: oauth.ServerError, Status: http.StatusInternalServerError}
	ErrTemporarilyUnavailable  = &Error{Code: oauth.TemporarilyUnavailable, Status: http.StatusServiceUnavailable}
	ErrUnsupportedTokenType    = &Error{Code: oauth.UnsupportedTokenType, Status: http.StatusBadRequest}
	// ErrTooManyRequests answers a client (or source address) whose failed
	// client authentications exceeded the limit: 429 with Retry-After.
	ErrTooManyRequests = &Error{Code: oauth.TooManyRequests, Status: http.StatusTooManyRequests}
	// ErrInvalidDPoPProof: the token request's DPoP proof is missing
	// where required, or invalid (RFC 9449 §5, §12.2).
	ErrInvalidDPoPProof = &Error{Code: oauth.InvalidDPoPProof, Status: http.StatusBadRequest}
	// ErrRequestNotSupported: a pushed authorization request carried a
	// request object, which oauthd does not support (RFC 9126 §2.3).
	ErrRequestNotSupported = &Error{Code: oauth.RequestNotSupported, Status: http.StatusBadRequest}
	// ErrRequestURINotSupported: a request_uri that is not a pushed
	// request's (OpenID Connect Core §3.1.2.6).
	ErrRequestURINotSupported = &Error{Code: oauth.RequestURINotSupported, Status: http.StatusBadRequest}
	// ErrLoginRequired and ErrConsentRequired answer prompt=none when the
	// user would have to log in or consent (OpenID Connect Core §3.1.2.6).
	ErrLoginRequired   = &Error{Code: oauth.LoginRequired, Status: http.StatusBadRequest}
	ErrConsentRequired = &Error{Code: oauth.ConsentRequired, Status: http.StatusBadRequest}
	// ErrInvalidTarget: a resource parameter names an API this server
	// does not issue tokens for, or one the grant does not cover
	// (RFC 8707 §2).
	ErrInvalidTarget = &Error{Code: oauth.InvalidTarget, Status: http.StatusBadRequest}
)

// WithDescription returns a copy of err with the formatted description.
func WithDescription(err *Error, format string, args ...any) *Error {
	e := *err
	e.Description = fmt.Sprintf(format, args...)
	return &e
}

// maxBodyDescription is the description of a 413.
const maxBodyDescription = "request body larger than 64 KiB"

// errBodyTooLarge is the 413 answer to a body over [maxBodySize].
var errBodyTooLarge = &Error{Code: oauth.InvalidRequest, Description: maxBodyDescription, Status: http.StatusRequestEntityTooLarge}

// writeOAuthError writes e as RFC 6749 §5.2 JSON with Cache-Control:
// no-store. An invalid_client answer to a request that authenticated with
// HTTP Basic carries WWW-Authenticate (RFC 6749 §5.2); a 429 carries
// Retry-After.
func writeOAuthError(c echo.Context, e *Error) error {
	h := c.Response().Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	if e.Code == ErrInvalidClient.Code && usedBasic(c.Request()) {
		h.Set("WWW-Authenticate", `Basic realm="oauthd"`)
	}
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	status := e.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	b, err := json.Marshal(errorBody{Error: e.Code, Description: rfcDescription(e.Description), URI: e.URI})
	if err != nil {
		return fmt.Errorf("error response: %w", err)
	}
	c.Response().WriteHeader(status)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	_, err = c.Response().Write(b)
	return err
}

// errorBody is the JSON object of an error response (RFC 6749 §5.2).
type errorBody struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
	URI         string `json:"error_uri,omitempty"`
}

// usedBasic reports whether r carries HTTP Basic credentials.
func usedBasic(r *http.Request) bool {
	a := r.Header.Get("Authorization")
	return len(a) >= 6 && strings.EqualFold(a[:6], "basic ")
}

// HTTPErrorHandler returns the Echo error handler for the API: an *[Error]
// is written as RFC 6749 §5.2 JSON; Echo's 413 (the body limit) becomes
// invalid_request with status 413; 404 and 405 and other client errors are
// JSON too; a store outage (data.ErrUnavailable) is 503
// temporarily_unavailable with Retry-After, reported to outage (which may
// be nil); anything else is a 500 server_error, logged in full and never
// described to the client. The consent pages render their own HTML errors.
func HTTPErrorHandler(logger *slog.Logger, outage *Outage) echo.HTTPErrorHandler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			logger.ErrorContext(c.Request().Context(), "error after response was committed",
				slog.String("path", c.Path()), slog.Any("err", err))
			return
		}
		if werr := writeOAuthError(c, toOAuthError(c, logger, outage, err)); werr != nil {
			logger.DebugContext(c.Request().Context(), "write error response", slog.Any("err", werr))
		}
	}
}

// toOAuthError maps any handler error to the *Error to send, logging
// server errors in full (a store outage once, through outage).
func toOAuthError(c echo.Context, logger *slog.Logger, outage *Outage, err error) *Error {
	var oe *Error
	if errors.As(err, &oe) {
		if oe.Status >= 500 {
			logger.ErrorContext(c.Request().Context(), "server error",
				slog.String("method", c.Request().Method), slog.String("path", c.Path()), slog.Any("err", err))
		}
		return oe
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch {
		case he.Code == http.StatusRequestEntityTooLarge:
			return errBodyTooLarge
		case he.Code == http.StatusNotFound:
			return &Error{Code: oauth.NotFound, Description: "no such endpoint", Status: http.StatusNotFound}
		case he.Code == http.StatusMethodNotAllowed:
			return &Error{Code: oauth.MethodNotAllowed, Description: "method not allowed on this endpoint", Status: http.StatusMethodNotAllowed}
		case he.Code >= 400 && he.Code < 500:
			return &Error{Code: oauth.InvalidRequest, Description: http.StatusText(he.Code), Status: he.Code}
		}
	}
	if Unavailable(err) {
		outage.Refused(c.Request().Context(), err)
		return errUnavailable
	}
	if ctx := c.Request().Context(); ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// The client hung up (or its deadline passed) while the request
		// ran: nobody reads the answer, and it is no server error (a
		// client could otherwise fill the error log by hanging up).
		logger.DebugContext(ctx, "request abandoned by the client",
			slog.String("method", c.Request().Method), slog.String("path", c.Path()), slog.Any("err", err))
		return errAbandoned
	}
	logger.ErrorContext(c.Request().Context(), "server error",
		slog.String("method", c.Request().Method), slog.String("path", c.Path()), slog.Any("err", err))
	return ErrServerError
}

// errAbandoned answers a request whose client went away before it was
// served (nobody reads it; the status only shows in the access log).
var errAbandoned = &Error{Code: oauth.InvalidRequest, Description: "the request was abandoned by the client", Status: http.StatusBadRequest}
