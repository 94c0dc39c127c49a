package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"oauthd/data/postgres/pgtest"
)

// laterMigration is what a later migration typically does to families
// (the pattern of 0005_users): a column added with a default, filled from
// the body, its default dropped, an index on it, a CHECK constraint.
const laterMigration = `ALTER TABLE families ADD COLUMN tagged boolean NOT NULL DEFAULT false;
UPDATE families SET tagged = coalesce((body->>'tagged')::boolean, false) WHERE body ? 'tagged';
ALTER TABLE families ALTER COLUMN tagged DROP DEFAULT;
CREATE INDEX families_tagged ON families (tagged, id);
ALTER TABLE families ADD CONSTRAINT families_gc_le_expiry CHECK (gc_ns <= expires_ns);`

// TestLaterMigrationOnBothShapes: a migration written as the migrations
// are (statements on families, no ONLY, no storage parameter) runs on the
// plain and on the partitioned table alike, and a conversion after it
// carries its column, index and constraint over, in both directions.
func TestLaterMigrationOnBothShapes(t *testing.T) {
	ctx := context.Background()
	for _, partitions := range []int{0, 8} {
		url := pgtest.New(t)
		if _, _, err := Migrate(ctx, url, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := PartitionFamilies(ctx, url, partitions, nil); err != nil {
			t.Fatal(err)
		}
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `INSERT INTO families (id, client_id, user_id, expires_ns, gc_ns, body) VALUES
			('a', 'c', 1, 10, 10, '{"id":"a","tagged":true}'), ('b', 'c', 1, 10, 5, '{"id":"b"}')`); err != nil {
			t.Fatal(err)
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, laterMigration); err != nil {
				return err
			}
			for _, to := range []int{4, 0, 16} {
				if _, err := tx.Exec(ctx, "LOCK TABLE families IN ACCESS EXCLUSIVE MODE"); err != nil {
					return err
				}
				if n, err := reshapeFamilies(ctx, tx, to); err != nil || n != 2 {
					t.Fatalf("on %d partitions, reshape to %d after the later migration: %d rows, %v", partitions, to, n, err)
				}
				var tagged string
				var index, check bool
				if err := tx.QueryRow(ctx, `SELECT string_agg(id || '=' || tagged, ',' ORDER BY id),
					EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = 'families_tagged' AND indexdef LIKE '%(tagged, id)'),
					EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'families_gc_le_expiry' AND conrelid = 'families'::regclass)
					FROM families`).Scan(&tagged, &index, &check); err != nil {
					return err
				}
				if tagged != "a=true,b=false" || !index || !check {
					t.Fatalf("on %d partitions, reshaped to %d after the later migration: rows %s, index %v, check %v", partitions, to, tagged, index, check)
				}
				sp, err := tx.Begin(ctx) // a savepoint: the insert must fail
				if err != nil {
					return err
				}
				_, err = sp.Exec(ctx, "INSERT INTO families (id, client_id, user_id, expires_ns, gc_ns, tagged, body) VALUES ('x', 'c', 1, 1, 2, false, '{}')")
				if err == nil || !strings.Contains(err.Error(), "families_gc_le_expiry") {
					t.Fatalf("on %d partitions, reshaped to %d: the CHECK constraint did not hold: %v", partitions, to, err)
				}
				if err := sp.Rollback(ctx); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("on %d partitions: %v", partitions, err)
		}
	}
}

// TestPartitionFamiliesBusy: a transaction that holds the families table
// (an export's snapshot read, say) makes the conversion give up after
// lockWait with ErrBusy, rather than keep every statement on the table
// waiting behind it; the table is left as it was, and the conversion
// works once that transaction has ended.
func TestPartitionFamiliesBusy(t *testing.T) {
	ctx := context.Background()
	url := pgtest.New(t)
	if _, _, err := Migrate(ctx, url, nil); err != nil {
		t.Fatal(err)
	}
	defer func(d time.Duration) { lockWait = d }(lockWait)
	lockWait = 300 * time.Millisecond
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT count(*) FROM families"); err != nil {
		t.Fatal(err)
	}
	if _, err := PartitionFamilies(ctx, url, 8, nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("PartitionFamilies while a transaction reads families = %v; want ErrBusy", err)
	}
	if shape, err := FamiliesShape(ctx, url); err != nil || shape.Partitions != 0 {
		t.Fatalf("after the refusal: shape %+v, %v; want the plain table", shape, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := PartitionFamilies(ctx, url, 8, nil); err != nil || !r.Converted {
		t.Fatalf("PartitionFamilies after the reader ended = %+v, %v", r, err)
	}
}
