// Package bolt is the durable [data.Store] of oauthd, on one bbolt file.
//
// Records pass through [data.Normalize] and are stored JSON-encoded
// (refresh-token families and codes in a compact binary form), one bucket
// per kind, with index buckets for the unique, case-insensitive user
// email and username and for the refresh-token families of each client.
// Every write is durable (fsynced) before its method returns; none uses
// bbolt's NoSync, and a failed flush stops the process
// ([Options.OnFatal]).
//
// Users, clients, grants and keys are plain bbolt transactions. The
// hot-path writes (issuing and exchanging codes, rotating and revoking
// refresh tokens, sessions, nonces) go to the "hot buckets" through
// package internal/wal: a group commit and a write-ahead log beside the
// file (the database's path plus "-wal"), read through its overlay until a
// checkpoint copies them into the bbolt file. The log needs one
// fdatasync per batch where a bbolt commit needs two, with its writer lock
// held through both (docs/PERFORMANCE.md compares it with bbolt's
// DB.Batch). The calls that scan or sweep the hot buckets (ListFamilies,
// Export, Import, the collector, disabling a user) run on the bbolt file
// after a checkpoint (wal.Log.Exclusive); Open replays what a crash left
// in the log.
//
// Package bolt knows only package data; only cmd/ opens it.
package bolt
