package issuer

import (
	"net/url"

	"oauthd/data"
)

// AuthorizeRequest is a validated authorization request (RFC 6749 §4.1.1),
// ready to be shown on the consent page.
type AuthorizeRequest struct {
	Client      data.Client
	RedirectURI string
	State       string
	// Scopes are the requested scopes, parsed and folded; empty for a legacy
	// client that sent no scope.
	Scopes []string
	// Unrestricted is true for a legacy client: its tokens carry
	// "unrestricted": true until the client is migrated.
	Unrestricted  bool
	CodeChallenge string
	// Query is the original query, which the consent form posts back so the
	// decision is validated again from scratch; for a pushed request
	// (RFC 9126), client_id and the consent continuation of its
	// request_uri (see par.go).
	Query url.Values
}

// PageError is an authorization error found before the client and its
// redirect_uri are trusted: it is shown as an HTML page with status 400 and
// never redirects (RFC 6749 §4.1.2.1).
type PageError struct {
	Title   string
	Message string
}

func (e *PageError) Error() string { return e.Title + ": " + e.Message }

// RedirectError is an authorization error reported to the client by
// redirecting (303) the browser to URL, which carries error,
// error_description, state and iss (RFC 6749 §4.1.2.1, RFC 9207).
type RedirectError struct {
	URL  string
	Code string // the RFC 6749 error code, e.g. invalid_scope
}

func (e *RedirectError) Error() string { return "authorization error " + e.Code }
