// Package wal is the write-ahead log of package bolt's hot buckets: the
// writes of oauthd's hot path (codes, refresh-token families, sessions,
// tombstones, nonces).
//
// A bbolt commit is two fsyncs in a row with the writer lock held. A [Log]
// instead runs concurrent writes ([Log.Write]) in one group-commit batch,
// appends the batch to one file beside the database (one CRC-checked
// record) and answers them after one fdatasync. Until a checkpoint copies
// them into the bbolt file (as the log grows, before [Log.Exclusive], on
// [Log.Checkpoint] and on [Log.Close]), the written values are served from
// an in-memory overlay ([Log.Get], [Log.Pending], and [Tx.Get] inside a
// write). [Open] replays what a crash left in the log. The file format and
// its recovery rules are in format.go; docs/DESIGN.md "Write-ahead log"
// says why.
//
// The API, in full: Open, Write (with Tx's Get, Put, Delete, Bolt and
// Keep), Exclusive, Get, Pending, Checkpoint, Stats, Close. The package
// knows bbolt and nothing of oauthd's records: buckets are given by
// index (Options.Buckets), values are bytes.
package wal
