// Package cache wraps a [data.Store] so that GetClient is served from
// memory: the token endpoint authenticates a client on every request, and
// decoding its record from the database each time is pure overhead.
//
// The cache is only correct when every client write goes through the
// wrapper. In a running server that holds: the issuer, the consent pages
// and the admin socket (the CLI's changes) all share one wrapped store, and
// the database file is locked against other processes.
package cache
