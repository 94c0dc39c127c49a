// Package oauth is the OAuth 2.0 error vocabulary every layer of oauthd
// speaks: the error codes the authorization server (package issuer and the
// consent pages above it) and the resource-server guard (keys/guard) put
// in their answers, each spelled once, with the RFC section that registers
// it.
//
// It is a leaf package with no dependencies, at the bottom of the import
// graph, because keys/guard sits below issuer and answers with the same
// words (RFC 6750 §3.1, RFC 9449 §7). The typed error that carries a code
// with its description and HTTP status, and its mapping to a response, is
// issuer.Error: only the authorization server's endpoints return it. The
// JSON bodies of a protected resource's errors ([ErrorBody],
// [ScopeErrorBody]) are here because the guard and /v2/me both write them.
// This package makes no decisions.
package oauth
