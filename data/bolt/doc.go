// Package bolt is the durable [data.Store] of oauthd, on one bbolt file.
//
// Records are JSON-encoded (times in UTC; refresh-token families in a
// compact binary form) in one bucket per kind, with index buckets for the
// unique, case-insensitive user email and username and for the
// refresh-token families of each client. Every write is durable (fsynced)
// before its method returns; none uses bbolt's NoSync.
//
// The hot-path writes (issuing and exchanging codes, rotating and revoking
// refresh tokens, creating and deleting sessions) go through a group
// commit and a write-ahead log beside the file (the database's path plus
// "-wal"; see wal.go): concurrent calls share one log record and one
// fdatasync, with no added wait for a call that arrives alone, and are
// served from an in-memory overlay until a checkpoint copies them into
// the bbolt file (as the log grows, before a scan of those buckets, and on
// Close). Open replays what a crash left in the log. The other writes
// (users, clients, grants, keys) are bbolt transactions of their own.
//
// Package bolt knows only package data; only cmd/ opens it.
package bolt
