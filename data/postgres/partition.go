package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The families table in two shapes (docs/SCALE.md "Hash-partitioned
// families"): the plain table the migrations create, or, after
// [PartitionFamilies], a table partitioned by HASH (id) with the same
// columns, primary key and indexes (partitioned indexes, one per
// partition). The queries are the same on both; the schema version does
// not tell the shapes apart, and a migration must work on both (see
// docs/POSTGRESQL.md "Partitioned families").

// Bounds of [PartitionFamilies]' partitions.
const (
	MinPartitions = 2
	MaxPartitions = 256
)

// Errors of [PartitionFamilies].
var (
	// ErrPartitions: a number of partitions it does not take.
	ErrPartitions = errors.New("the number of partitions must be 0 (unpartitioned) or 2–256")
	// ErrBusy: another transaction held the families table too long.
	ErrBusy = errors.New("the families table is busy")
)

// lockWait bounds how long PartitionFamilies waits for the families
// table, during which every other statement on it waits too.
var lockWait = 10 * time.Second

func isLockTimeout(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}

// familiesFillfactor is each partition's fillfactor, as the plain table's
// (migration 1): room in each page for HOT rotations.
const familiesFillfactor = 70

// Partitioning is the shape of the families table.
type Partitioning struct {
	Partitions int `json:"partitions"` // 0: a plain table; else HASH partitions of modulus Partitions
}

// PartitionResult is what [PartitionFamilies] did.
type PartitionResult struct {
	From      Partitioning  `json:"from"`
	To        Partitioning  `json:"to"`
	Converted bool          `json:"converted"` // false: the table had that shape already
	Families  int64         `json:"families"`  // the rows copied
	Took      time.Duration `json:"took_ns"`
}

// FamiliesShape returns the shape of the families table at url.
func FamiliesShape(ctx context.Context, url string) (Partitioning, error) {
	conn, err := migrationConn(ctx, url)
	if err != nil {
		return Partitioning{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return familiesShape(ctx, conn)
}

// familiesShape reads the shape of families: a plain table, or the
// modulus of its hash partitions (which must all share it).
func familiesShape(ctx context.Context, q querier) (Partitioning, error) {
	var kind string
	var parts, moduli int
	var modulus *int
	err := q.QueryRow(ctx, `SELECT c.relkind::text,
		(SELECT count(*) FROM pg_inherits i WHERE i.inhparent = c.oid),
		(SELECT count(DISTINCT (regexp_match(pg_get_expr(p.relpartbound, p.oid), 'modulus (\d+)', 'i'))[1]) FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid WHERE i.inhparent = c.oid),
		(SELECT max((regexp_match(pg_get_expr(p.relpartbound, p.oid), 'modulus (\d+)', 'i'))[1]::int) FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid WHERE i.inhparent = c.oid)
		FROM pg_class c WHERE c.oid = 'families'::regclass`).Scan(&kind, &parts, &moduli, &modulus)
	if err != nil {
		return Partitioning{}, fmt.Errorf("read the shape of the families table: %w", err)
	}
	switch {
	case kind == "r":
		return Partitioning{}, nil
	case kind == "p" && moduli == 1 && modulus != nil && *modulus == parts:
		return Partitioning{Partitions: parts}, nil
	}
	return Partitioning{}, fmt.Errorf("the families table is of kind %q with %d partitions of %d moduli: not a shape oauthd made; convert it by hand or restore it", kind, parts, moduli)
}

// migrationConn opens the one connection Migrate and PartitionFamilies
// work on (no session needed: url may be a transaction pool).
func migrationConn(ctx context.Context, url string) (*pgx.Conn, error) {
	cfg, err := parseConfig(url, Options{})
	if err != nil {
		return nil, err
	}
	if !urlSets(url, "default_query_exec_mode") {
		// A few statements, once: nothing worth preparing.
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return nil, explainConnect(err)
	}
	return conn, nil
}

// PartitionFamilies gives the families table at url the shape of
// partitions hash partitions of its ID (0: a plain table again), in one
// transaction under the migration lock: it creates the new table (the
// same columns, defaults and constraints; each partition with
// fillfactor 70), copies every row, builds the primary key and the
// indexes (the same definitions, partitioned), drops the old table and
// gives the new one, and its indexes, the old names. Every statement on
// families meanwhile, from any replica, waits for it (none fails: it then
// runs on the new table); a failure leaves the table as it was. A table
// already of that shape is left as it is (Converted false). The database
// must be at the schema version this build knows.
func PartitionFamilies(ctx context.Context, url string, partitions int, logger *slog.Logger) (PartitionResult, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if partitions != 0 && (partitions < MinPartitions || partitions > MaxPartitions) {
		return PartitionResult{}, fmt.Errorf("%w, not %d", ErrPartitions, partitions)
	}
	conn, err := migrationConn(ctx, url)
	if err != nil {
		return PartitionResult{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	start := time.Now()
	r := PartitionResult{To: Partitioning{Partitions: partitions}}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLock); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		if err := checkSchema(ctx, tx); err != nil {
			return err
		}
		var err error
		if r.From, err = familiesShape(ctx, tx); err != nil {
			return err
		}
		if r.From == r.To {
			return nil
		}
		// Every statement on families waits from here to the commit. A
		// transaction that holds the table (an export, say) would make
		// them all queue behind this lock: give up after lockWait.
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", lockWait.Milliseconds())); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "LOCK TABLE families IN ACCESS EXCLUSIVE MODE"); err != nil {
			if isLockTimeout(err) {
				return fmt.Errorf("%w: a transaction has held the families table for %s (a `store copy` or an export, a long query?); run again when it has ended", ErrBusy, lockWait)
			}
			return fmt.Errorf("lock the families table: %w", err)
		}
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = 0"); err != nil {
			return err
		}
		if r.Families, err = reshapeFamilies(ctx, tx, partitions); err != nil {
			return err
		}
		r.Converted = true
		return nil
	})
	if err != nil {
		return PartitionResult{}, fmt.Errorf("partition families: %w", classify(err))
	}
	r.Took = time.Since(start)
	if r.Converted {
		logger.InfoContext(ctx, "families table reshaped", "from_partitions", r.From.Partitions, "to_partitions", partitions, "families", r.Families, "took", r.Took)
	}
	return r, nil
}

// indexDef parses pg_get_indexdef's CREATE INDEX statement: its name, and
// all from USING on.
var indexDef = regexp.MustCompile(`^CREATE (UNIQUE )?INDEX (\S+) ON (?:ONLY )?\S+ (USING .+)$`)

// reshapeFamilies is PartitionFamilies' work, in its transaction, with
// families locked. It returns the rows copied.
func reshapeFamilies(ctx context.Context, tx pgx.Tx, partitions int) (int64, error) {
	const next = "families_reshaped"
	// The old table's indexes and constraints, to build again on the new.
	type index struct{ name, create string }
	var indexes []index
	rows, err := tx.Query(ctx, `SELECT ci.relname, pg_get_indexdef(i.indexrelid), coalesce(con.conname, ''), coalesce(pg_get_constraintdef(con.oid), '')
		FROM pg_index i JOIN pg_class ci ON ci.oid = i.indexrelid
		LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid AND con.conrelid = i.indrelid
		WHERE i.indrelid = 'families'::regclass ORDER BY ci.relname`)
	if err != nil {
		return 0, fmt.Errorf("read the indexes of families: %w", err)
	}
	for rows.Next() {
		var name, def, conName, conDef string
		if err := rows.Scan(&name, &def, &conName, &conDef); err != nil {
			return 0, err
		}
		tmp := pgx.Identifier{name + "_reshaped"}.Sanitize()
		if conName != "" {
			// The primary key (or a unique constraint): the same
			// definition, under a name renamed below.
			indexes = append(indexes, index{name, "ALTER TABLE " + next + " ADD CONSTRAINT " + tmp + " " + conDef})
			continue
		}
		m := indexDef.FindStringSubmatch(def)
		if m == nil {
			return 0, fmt.Errorf("index %s of families: cannot rebuild %q", name, def)
		}
		indexes = append(indexes, index{name, "CREATE " + m[1] + "INDEX " + tmp + " ON " + next + " " + m[3]})
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read the indexes of families: %w", err)
	}
	stmts := []string{
		// The columns, their defaults, NOT NULL and CHECK constraints.
		"CREATE TABLE " + next + " (LIKE families INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING COMMENTS)",
	}
	if partitions > 0 {
		stmts[0] += " PARTITION BY HASH (id)"
		for i := range partitions {
			stmts = append(stmts, fmt.Sprintf("CREATE TABLE families_h%d_%d PARTITION OF %s FOR VALUES WITH (MODULUS %d, REMAINDER %d) WITH (fillfactor = %d)",
				partitions, i, next, partitions, i, familiesFillfactor))
		}
	} else {
		stmts[0] += fmt.Sprintf(" WITH (fillfactor = %d)", familiesFillfactor)
	}
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q); err != nil {
			return 0, fmt.Errorf("create the new families table: %s: %w", q, err)
		}
	}
	// The copy before the indexes: one sorted build each, not an insert
	// per row into each.
	tag, err := tx.Exec(ctx, "INSERT INTO "+next+" SELECT * FROM families")
	if err != nil {
		return 0, fmt.Errorf("copy the families: %w", err)
	}
	for _, ix := range indexes {
		if _, err := tx.Exec(ctx, ix.create); err != nil {
			return 0, fmt.Errorf("build index %s: %s: %w", ix.name, ix.create, err)
		}
	}
	stmts = []string{"DROP TABLE families", "ALTER TABLE " + next + " RENAME TO families"}
	for _, ix := range indexes {
		stmts = append(stmts, "ALTER INDEX "+pgx.Identifier{ix.name + "_reshaped"}.Sanitize()+" RENAME TO "+pgx.Identifier{ix.name}.Sanitize())
	}
	stmts = append(stmts, "ANALYZE families")
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q); err != nil {
			return 0, fmt.Errorf("swap the families tables: %s: %w", q, err)
		}
	}
	return tag.RowsAffected(), nil
}

// familyKey matches the name of the families primary key, and of its
// partitions' (families_h16_3_pkey): a unique violation on a partitioned
// table names the partition's index.
var familyKey = regexp.MustCompile(`^families(_h\d+_\d+)?_pkey$`)

// isFamilyTaken reports whether err is a family ID that exists already,
// in either shape of the table.
func isFamilyTaken(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && familyKey.MatchString(pe.ConstraintName)
}
