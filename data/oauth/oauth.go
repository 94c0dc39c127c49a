package oauth

// The registered error codes oauthd answers with (IANA "OAuth Extensions
// Error Registry"), by the specification that defines them.
const (
	// RFC 6749 §4.1.2.1 (authorization endpoint), §5.2 (token endpoint)
	// and RFC 6750 §3.1 (resource server).
	InvalidRequest = "invalid_request"

	// RFC 6749 §5.2: errors of the token endpoint.
	InvalidClient        = "invalid_client"
	InvalidGrant         = "invalid_grant"
	UnauthorizedClient   = "unauthorized_client"
	UnsupportedGrantType = "unsupported_grant_type"
	InvalidScope         = "invalid_scope" // also §4.1.2.1

	// RFC 6749 §4.1.2.1: errors of the authorization endpoint.
	AccessDenied            = "access_denied"
	UnsupportedResponseType = "unsupported_response_type"
	ServerError             = "server_error"
	TemporarilyUnavailable  = "temporarily_unavailable"

	// RFC 6750 §3.1: errors of a protected resource.
	InvalidToken      = "invalid_token"
	InsufficientScope = "insufficient_scope"

	// RFC 7009 §2.2.1: the revocation endpoint does not revoke this kind
	// of token.
	UnsupportedTokenType = "unsupported_token_type"

	// RFC 9449 §12.2 (used in §5 and §7.1): the DPoP proof is missing or
	// invalid.
	InvalidDPoPProof = "invalid_dpop_proof"

	// OpenID Connect Core 1.0 §3.1.2.6, in the IANA registry: the server
	// does not support the request parameter (request objects); the pushed
	// authorization request endpoint answers it (RFC 9126 §2.3).
	RequestNotSupported = "request_not_supported"
	// OpenID Connect Core 1.0 §3.1.2.6: the request_uri is not a pushed
	// request's (request objects by reference are not supported).
	RequestURINotSupported = "request_uri_not_supported"
	// OpenID Connect Core 1.0 §3.1.2.6: prompt=none, and the user must log
	// in (login_required) or consent (consent_required) first.
	LoginRequired   = "login_required"
	ConsentRequired = "consent_required"

	// RFC 8707 §2: a resource indicator names no API this server issues
	// tokens for, or one the grant does not cover.
	InvalidTarget = "invalid_target"

	// RFC 8628 §3.5: a device's poll of the token endpoint before the
	// user answered, too fast, or after the device code expired
	// (access_denied, above, when the user refused).
	AuthorizationPending = "authorization_pending"
	SlowDown             = "slow_down"
	ExpiredToken         = "expired_token"
)

// Codes oauthd answers with that no RFC registers. They are kept because
// clients and the CONTRACT already rely on them; a new answer uses a
// registered code above.
const (
	// TooManyRequests answers a client or address whose failed client
	// authentications exceeded the limit (429 with Retry-After). RFC 6749
	// has no code for it; invalid_client would invite the client to try
	// other credentials.
	TooManyRequests = "too_many_requests"
	// NotFound and MethodNotAllowed answer a request to no endpoint, or
	// with a method the endpoint does not take (404, 405): no OAuth
	// endpoint was reached, so no OAuth code applies.
	NotFound         = "not_found"
	MethodNotAllowed = "method_not_allowed"
	// BadGateway answers a request the gateway (keys/guard's proxy)
	// allowed but could not pass on: the upstream is down (502). The
	// token was fine, so invalid_token would mislead the client.
	BadGateway = "bad_gateway"
)

// ErrorBody is the JSON body of an error answered by a protected resource
// (keys/guard, /v2/me): RFC 6750 §3.1 puts the code in WWW-Authenticate,
// and oauthd repeats it in the body (CONTRACT.md, "API authorization
// errors").
type ErrorBody struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// ScopeErrorBody is the body of an insufficient_scope answer (403): it
// names the scopes the route requires and those the token was granted,
// both always present (an empty list is []).
type ScopeErrorBody struct {
	Error          string   `json:"error"`
	Description    string   `json:"error_description"`
	RequiredScopes []string `json:"required_scopes"`
	GrantedScopes  []string `json:"granted_scopes"`
}
