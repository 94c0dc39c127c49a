// Package guard enforces the scheduling API's route table on resource
// servers: it matches a request to a route (method and path pattern →
// required scopes, or public), verifies the bearer token with a verifier
// from package verify, and lets the request through only when the token's
// scopes cover the route. It ships the route table as embedded data
// ([DefaultTable], every row of api-routes.md), loads operator tables
// ([LoadTableFile], [Table.Merge]), provides Echo and net/http middleware
// ([Guard.Echo], [Guard.HTTP]) and the reverse proxy behind
// `oauthd gateway` ([NewProxy]). It does not issue tokens and does not
// fetch keys itself.
//
// Paths. The guard checks the path the application will serve, so it
// refuses (400 invalid_request) any path it would have to interpret: empty
// segments ("//"), "." and ".." segments (also percent-encoded), encoded
// slashes or backslashes. A single trailing slash is dropped: "/v2/me/"
// is checked as "/v2/me", and the next handler (or the upstream, through
// the proxy) receives "/v2/me". See [CanonicalPath].
//
// Matching. Static segments beat parameters; when a static branch has no
// route for the method the parameter branch is tried, as the upstream
// router would. HEAD uses the GET route. Methods are case-sensitive.
package guard
