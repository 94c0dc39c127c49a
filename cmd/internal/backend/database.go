package backend

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

// Inspection is what a backend's inspect found.
type Inspection struct {
	Keys []data.SigningKey // its signing keys
}

// PartitionResult is what PartitionFamilies did.
type PartitionResult struct {
	From, To  int // partitions before and after (0: a plain table)
	Converted bool
	Families  int64 // the rows copied
	Took      time.Duration
}

// CompactReport is what store compact prints.
type CompactReport struct {
	BytesBefore     int64 `json:"bytes_before"`
	BytesAfter      int64 `json:"bytes_after"`
	FreePagesBefore int   `json:"free_pages_before"`
}

// Mode is what a command opens the database for.
type Mode int

const (
	ForServe    Mode = iota // serve and bench: created or migrated when needed, tuned for serving
	ForCLI                  // an operator command: must exist; a small pool
	ForCLIRead              // an operator command that only reads (list, show): as ForCLI, and opened read-only where the backend can
	ForCopyFrom             // store copy's --from: must exist
	ForCopyTo               // store copy's --to: new or empty; created
)

// Database is an opened --db and what its backend offers besides the
// records.
type Database struct {
	data.Store
	Collectors []prometheus.Collector // its metrics
	// Audit also stores the audit records (every process's in one place),
	// or is nil.
	Audit admin.AuditStore
	// Throttle shares the limiters' failures between replicas, or is nil:
	// each process counts alone.
	Throttle throttle.Rows
	// Follow calls fn with every change other processes make, until ctx
	// is done; nil: no other process changes the database.
	Follow func(ctx context.Context, fn func(context.Context, Change))
	// GC removes the backend's own expired records, or is nil.
	GC func(ctx context.Context, now time.Time) (int, error)
	// Discard removes what open made after a failed store copy (err);
	// nil: nothing to remove.
	Discard func(err error)
}

// Change is a change another process made to the database.
type Change struct {
	Reset bool   // changes may have been missed: re-read everything cached
	Kind  string // "client", "keys", "throttle" (Row, Full), …
	Row   []byte
	Full  int64
}

// SchemaVersion is the schema a backend's database has for this build.
type SchemaVersion struct {
	Backend  string   `json:"backend"`  // "bbolt" or "postgres"
	Reads    string   `json:"reads"`    // the schema this build reads and writes
	Upgrades []string `json:"upgrades"` // the older schemas it upgrades to Reads (serve, or `store migrate` on PostgreSQL)
}
