// Package admin is the operator API of oauthd: what the `oauthd` command line
// does to users, clients, client secrets and signing keys, and the apps a
// user allowed (apps.go, which the Connected apps page calls too).
//
// [Service] is the contract. [Local] implements it over a [Store] (the
// slice of data.Store it uses) and a key manager (the server's own, or one
// the CLI builds when no server runs);
// [Handler] serves a Service as JSON over HTTP on the admin Unix socket beside
// the database file ([Listen] opens it, mode 0600), and [SocketClient] (from [Dial]) implements the same Service
// over that socket, so a change made through the CLI takes effect in a running
// server at once. Errors cross the socket as a kind plus a message and come
// back wrapping the same data sentinels (data.ErrNotFound, ...), so callers
// and the CLI see identical errors either way.
//
// The package never returns or logs a stored secret hash; a client secret is
// shown once, in the result of the call that made it. It does not serve any
// public endpoint.
package admin
