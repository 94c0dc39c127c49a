// Package issuer is the OAuth 2.0 authorization server proper: it validates
// authorization requests and issues codes (the consent pages of package
// consent call it), runs the token endpoint (authorization_code and
// refresh_token grants, RFC 6749 §4.1 and §6, PKCE RFC 7636), mints RFC 9068
// JWT access tokens through a Signer, and serves revocation (RFC 7009),
// introspection (RFC 7662), the RFC 8414 metadata and /v2/me, and is an
// OpenID Provider (oidc.go, userinfo.go: ID tokens, userinfo, discovery,
// the prompt/max_age/nonce rules, what a sign-out may do). It renders no
// HTML and holds no signing key (only the refresh-token tag key it is
// given). What a presented refresh token is worth, narrowing at refresh and
// whether an access token's grant still stands are decided here, each in
// one place (refresh.go, grant.go). [NewEcho] is the HTTP frame every route
// of the server sits in (one error handler, request log and metrics, body
// limit, the source address of [TrustedProxies]).
package issuer
