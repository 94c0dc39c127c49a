// Package guard enforces the scheduling API's route table on resource
// servers: it matches a request to a route (method and path pattern →
// required scopes, or public), verifies the bearer token with a verifier
// from package verify, and lets the request through only when the token's
// scopes cover the route. It ships the route table as embedded data,
// provides Echo and net/http middleware, and the reverse proxy behind
// `oauthd gateway`. It does not issue tokens.
package guard
