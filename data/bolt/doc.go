// Package bolt is the durable [data.Store] of oauthd, on one bbolt file.
//
// Records are JSON-encoded (times in UTC) in one bucket per kind, with index
// buckets for the unique, case-insensitive user email and username and for
// the refresh-token families of each client. Every write is fsynced before
// its method returns. The hot-path writes (issuing and exchanging codes,
// rotating and revoking refresh tokens, creating sessions) go through a
// group commit: concurrent calls share one transaction and one fsync, with
// no added wait for a call that arrives alone.
//
// Package bolt knows only package data; only cmd/ opens it.
package bolt
