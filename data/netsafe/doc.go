// Package netsafe is the one outbound HTTP client for fetches an outside
// party chooses the URL of (client ID metadata documents, a client's
// jwks_uri): https only, no redirect followed, a bounded body and time,
// and only public addresses, checked on the address actually connected
// to (a net.Dialer Control function), not only on the name, so DNS
// rebinding cannot reach a private address. The operator may allow
// private networks (tests, deployments inside a private network).
//
// It is a leaf package: it imports nothing of oauthd.
package netsafe
