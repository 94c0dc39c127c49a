// Package bolt is the durable [data.Store] of oauthd, on one bbolt file.
//
// Records pass through [data.Normalize] and are stored JSON-encoded
// (refresh-token families and codes in a compact binary form), one bucket
// per kind, with index buckets for the unique, case-insensitive user
// email and username and for the refresh-token families of each client. Every write is durable (fsynced)
// before its method returns; none uses bbolt's NoSync.
//
// Users, clients, grants and keys are plain bbolt transactions. The
// hot-path writes (issuing and exchanging codes, rotating and revoking
// refresh tokens, sessions, nonces) go to the "hot buckets" through
// package internal/wal: a group commit and a write-ahead log beside the
// file (the database's path plus "-wal"), read through its overlay until a
// checkpoint copies them into the bbolt file. That log is kept because it
// measured more than 15% faster at c=64 than bbolt's own DB.Batch
// (docs/PERFORMANCE.md "The write-ahead log against DB.Batch"). The calls
// that scan or sweep the hot buckets (ListFamilies, Export, Import, the
// collector, disabling a user) run on the bbolt file after a checkpoint
// (wal.Log.Exclusive); Open replays what a crash left in the log.
//
// Package bolt knows only package data; only cmd/ opens it.
package bolt
