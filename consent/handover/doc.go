// Package handover verifies the login assertions a platform signs when it
// logs a user in for oauthd (docs/LOGIN-HANDOVER.md): a short-lived JWT
// (ES256, EdDSA or RS256) from the platform's issuer, for oauthd's issuer
// as its only audience, naming the platform's user, the one-time challenge
// oauthd sent, and a jti. It fetches the platform's keys (a JWKS URL, or a
// JWKS or PEM file) and follows their rotation. It does not know about
// browsers, cookies, sessions or users: package consent binds the
// challenge to the browser, spends the jti and opens the session.
package handover
