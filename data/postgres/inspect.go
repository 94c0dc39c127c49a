package postgres

import (
	"context"
	"fmt"

	"oauthd/data"
)

// Inspection is what [Inspect] found in a database.
type Inspection struct {
	// Schema is the database's schema version (0: no oauthd schema yet;
	// [Open] with Options.Migrate creates it).
	Schema int
	// Keys is the signing-key set ([data.Store.ListKeys]); nil without a
	// schema.
	Keys []data.SigningKey
}

// Inspect reads, without writing anything, what must be checked before
// [Migrate] may change the database: its schema version (one from a newer
// oauthd is refused, as Migrate refuses it) and its signing keys (a table
// no migration has changed since the first). Like Migrate it needs no
// session: url may be a transaction pool.
func Inspect(ctx context.Context, url string) (Inspection, error) {
	conn, err := migrationConn(ctx, url)
	if err != nil {
		return Inspection{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var in Inspection
	err = conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM oauthd_schema").Scan(&in.Schema)
	if isUndefinedTable(err) {
		return Inspection{}, nil
	}
	if err != nil {
		return Inspection{}, fmt.Errorf("read the schema version: %w", err)
	}
	if want := SchemaVersion(); in.Schema > want {
		return Inspection{}, fmt.Errorf("%w: the database is at version %d, this oauthd knows up to %d; run a newer oauthd (`oauthd version` shows the schema a binary knows)", ErrSchemaTooNew, in.Schema, want)
	}
	if in.Schema == 0 {
		return in, nil
	}
	if in.Keys, err = queryOne[[]data.SigningKey](ctx, conn, "SELECT body FROM key_set WHERE id = 1"); err != nil {
		return Inspection{}, fmt.Errorf("read the signing keys: %w", err)
	}
	return in, nil
}
