// Package verify checks oauthd access tokens offline, the way every
// resource server of the scheduling platform does: JWT signature against a
// key from a [KeySource] (the issuer's JWKS, fetched and cached by
// [RemoteKeySet], or the issuer's own key manager in process), then the
// RFC 9068 profile: typ at+jwt, iss, aud, exp, nbf and iat with a small
// leeway. It returns typed [Claims], and remembers the tokens that passed
// in a bounded cache that never answers what the full check would refuse
// (see [Verifier.Verify]). It does not enforce routes or scopes: that is
// package guard.
package verify
