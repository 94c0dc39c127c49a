package issuer

import (
	"net/url"
	"time"

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
	// Resources are the request's RFC 8707 resource indicators, checked
	// against Config.Resources (resource.go); nil for none.
	Resources []string
	// Query is the original query, which the consent form posts back so the
	// decision is validated again from scratch; for a pushed request
	// (RFC 9126), client_id and the consent continuation of its
	// request_uri (see par.go).
	Query url.Values

	// OpenID Connect (Core §3.1.2.1; oidc.go).

	// OpenID: the scopes include openid; the code exchange returns an ID
	// token.
	OpenID bool
	// Nonce goes into the ID token; "" when none was sent.
	Nonce string
	// Prompt is the prompt parameter's values (none, login, consent,
	// select_account), checked; see [Server.Interact].
	Prompt []string
	// MaxAge is max_age when HasMaxAge.
	MaxAge    time.Duration
	HasMaxAge bool
	// LoginHint prefills the login form (login_hint); "" when absent or
	// too long.
	LoginHint string
	// HintSubject is the sub of a valid id_token_hint issued to this
	// client; "" without one.
	HintSubject string
}

// PageError is an authorization error found before the client and its
// redirect_uri are trusted: it is shown to the user as an HTML page with
// status 400 and never redirects (RFC 6749 §4.1.2.1). Err is the OAuth
// error it stands for (invalid_request, as the pushed authorization
// request endpoint answers it), whose Description is the page's message;
// errors.As finds it through the PageError.
type PageError struct {
	Title string
	Err   *Error
}

// NewPageError returns the *PageError titled title whose message is msg.
func NewPageError(title, msg string) *PageError {
	return &PageError{Title: title, Err: WithDescription(ErrInvalidRequest, "%s", msg)}
}

// Message is the page's text for the user: Err's description.
func (e *PageError) Message() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Description
}

func (e *PageError) Error() string { return e.Title + ": " + e.Message() }

// Unwrap returns Err.
func (e *PageError) Unwrap() error {
	if e.Err == nil {
		return nil
	}
	return e.Err
}

// RedirectError is an authorization error reported to the client by
// redirecting (303) the browser to URL, which carries Err's code and
// description as error and error_description, with state and iss
// (RFC 6749 §4.1.2.1, RFC 9207). errors.As finds Err through it.
type RedirectError struct {
	URL string
	Err *Error
}

func (e *RedirectError) Error() string {
	if e.Err == nil {
		return "authorization error"
	}
	return "authorization error " + e.Err.Code
}

// Unwrap returns Err.
func (e *RedirectError) Unwrap() error {
	if e.Err == nil {
		return nil
	}
	return e.Err
}
