// Package verify checks oauthd access tokens offline, the way every
// resource server of the scheduling platform does: JWT signature against a
// key from a [KeySource] (the issuer's JWKS, fetched and cached by
// [RemoteKeySet], or the issuer's own key manager in process), then the
// RFC 9068 profile: typ at+jwt, iss, aud, exp, nbf and iat with a small
// leeway. An ES256 signature must have the low S of its two valid forms
// (oauthd's signer makes that one), so a token has a single spelling. It
// returns typed [Claims], and remembers the tokens that passed in a
// bounded cache that never answers what the full check would refuse (see
// [Verifier.Verify]). With Config.Revoked (a [RevocationFeed] that
// follows the issuer's signed revoked-grants feed in the background) it
// also refuses tokens whose grant was revoked, cached or not, with a map
// lookup and no call on the request path. It does not enforce routes or
// scopes: that is
// package guard.
package verify
