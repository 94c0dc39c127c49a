// Package consent serves the HTML pages of the authorization flow: the login
// form for platform users, the consent page where a user allows or denies a
// client (RFC 6749 §4.1.1), and the error page for requests that must not be
// redirected (RFC 6749 §4.1.2.1). It owns browser sessions (cookie
// oauthd_session, stored only as its SHA-256), CSRF protection of every
// POST, login rate limiting and the pages' security headers.
//
// The developers' client settings under /settings/clients are package
// consent/settings, which uses this package's session, CSRF check, page
// frame, security headers and error pages through the exported surface in
// site.go ([Handler.SignedIn], [Handler.ValidPost], [NewPage],
// [Handler.Render], [Handler.ErrorPage], …). This package does not import
// it; a login may return to a /settings/ path (safeReturnTo).
//
// With [Config.Handover] set, the login is handed to the platform
// (handover.go, docs/LOGIN-HANDOVER.md): /auth/login sends the browser to
// the platform with a challenge bound to it by a cookie, and
// /auth/login/handover takes the platform's signed assertion (verified by
// package consent/handover), spends its jti, provisions the user by the
// platform's sub and opens the same session the login form would.
//
// OpenID Connect (docs/OIDC.md): the issuer's [issuer.Server.Interact]
// decides whether a request needs the login page (prompt=login, max_age,
// an id_token_hint of another user), the consent page, or neither
// (prompt=none); this package carries it out. Sessions record auth_time
// (the login, or the handover's assertion time). GET and POST
// /auth/logout are the end-session endpoint of RP-Initiated Logout 1.0
// (logout.go).
//
// Package consent does not validate authorization requests nor mint codes:
// it hands the query to an [Authorizer] (the issuer) and renders or follows
// what it answers. Password hashing is in package data/password.
package consent
