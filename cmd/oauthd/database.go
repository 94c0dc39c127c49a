package main

// The types of the one backend boundary (backend.go): what a command gets
// from a backend, without knowing which one it is.

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"oauthd/data"
	"oauthd/issuer/admin"
	"oauthd/issuer/throttle"
)

// inspection is what a backend's inspect found.
type inspection struct {
	keys []data.SigningKey // its signing keys
}

// partitionResult is what partitionFamilies did.
type partitionResult struct {
	From, To  int // partitions before and after (0: a plain table)
	Converted bool
	Families  int64 // the rows copied
	Took      time.Duration
}

// compactReport is what store compact prints.
type compactReport struct {
	BytesBefore     int64 `json:"bytes_before"`
	BytesAfter      int64 `json:"bytes_after"`
	FreePagesBefore int   `json:"free_pages_before"`
}

// openMode is what a command opens the database for.
type openMode int

const (
	forServe    openMode = iota // serve and bench: created or migrated when needed, tuned for serving
	forCLI                      // an operator command: must exist; a small pool
	forCLIRead                  // an operator command that only reads (list, show): as forCLI, and opened read-only where the backend can
	forCopyFrom                 // store copy's --from: must exist
	forCopyTo                   // store copy's --to: new or empty; created
)

// database is an opened --db and what its backend offers besides the
// records.
type database struct {
	data.Store
	collectors []prometheus.Collector // its metrics
	// audit also stores the audit records (every process's in one place),
	// or is nil.
	audit admin.AuditStore
	// throttle shares the limiters' failures between replicas, or is nil:
	// each process counts alone.
	throttle throttle.Rows
	// follow calls fn with every change other processes make, until ctx
	// is done; nil: no other process changes the database.
	follow func(ctx context.Context, fn func(context.Context, change))
	// gc removes the backend's own expired records, or is nil.
	gc func(ctx context.Context, now time.Time) (int, error)
	// discard removes what open made after a failed store copy (err);
	// nil: nothing to remove.
	discard func(err error)
}

// change is a change another process made to the database.
type change struct {
	Reset bool   // changes may have been missed: re-read everything cached
	Kind  string // "client", "keys", "throttle" (Row, Full), …
	Row   []byte
	Full  int64
}
