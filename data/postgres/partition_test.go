package postgres_test

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"oauthd/data"
	"oauthd/data/datatest"
	"oauthd/data/postgres"
	"oauthd/data/postgres/pgtest"
)

// partitioned returns a newDB of databases migrated and then with
// families partitioned into n hash partitions.
func partitioned(n int) func(testing.TB) string {
	return func(t testing.TB) string {
		t.Helper()
		url := pgtest.New(t)
		if _, _, err := postgres.Migrate(ctx, url, nil); err != nil {
			t.Fatal(err)
		}
		r, err := postgres.PartitionFamilies(ctx, url, n, nil)
		if err != nil || !r.Converted || r.To.Partitions != n {
			t.Fatalf("PartitionFamilies(%d) = %+v, %v", n, r, err)
		}
		return url
	}
}

// TestStorePartitioned runs the conformance suite on the partitioned
// schema.
func TestStorePartitioned(t *testing.T) {
	newDB := partitioned(8)
	datatest.RunStoreTests(t, func(t *testing.T) data.Store { return open(t, newDB(t)) })
}

// TestOnPartitionedSchema runs the replicas' races, the round-trip counts
// and the copy into PostgreSQL on the partitioned schema: the rules they
// check are kept by the families table's primary key and conditional
// writes, which partitioning must not weaken.
func TestOnPartitionedSchema(t *testing.T) {
	newDB := partitioned(4)
	for _, tc := range []struct {
		name string
		run  func(*testing.T, func(testing.TB) string)
	}{
		{"RotationOneWinner", testSharedRotationOneWinner},
		{"RotationChain", testSharedRotationChain},
		{"CodeExchangeOneWinner", testSharedCodeExchangeOneWinner},
		{"StaleGuess", testSharedStaleGuess},
		{"RevokeAppRace", testSharedRevokeAppRace},
		{"DisableRace", testSharedDisableRace},
		{"RotationRoundTrips", testRotationRoundTrips},
		{"RotationPromiseDecidesOnTheStoredFamily", testRotationPromiseDecidesOnTheStoredFamily},
		{"RotationPromiseOneWinner", testRotationPromiseOneWinner},
		{"CopyRoundTrip", testCopyRoundTrip},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newDB) })
	}
}

// familyRows is every column of every family, and every tombstone, as
// text, ordered.
func familyRows(t *testing.T, url string) (fams, tombs []string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	read := func(q string) []string {
		rows, err := conn.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	return read("SELECT f::text FROM families f ORDER BY id"), read("SELECT r::text FROM revoked_grants r ORDER BY grant_id")
}

// familiesSchema describes the families table as a migration sees it:
// its columns, its constraints and its indexes' names and definitions
// (without the table's name), whatever its shape.
func familiesSchema(t *testing.T, url string) []string {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT 'column ' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') || ' ' || coalesce(collation_name, '')
		FROM information_schema.columns WHERE table_name = 'families'
		UNION ALL SELECT 'constraint ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'families'::regclass
		UNION ALL SELECT 'index ' || ci.relname || ' ' || regexp_replace(pg_get_indexdef(i.indexrelid), ' ON (ONLY )?\S+ ', ' ON families ')
		FROM pg_index i JOIN pg_class ci ON ci.oid = i.indexrelid WHERE i.indrelid = 'families'::regclass
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPartitionFamilies converts a database holding families (new ones,
// rotated ones, tombstones of revoked ones) to 16 hash partitions while a
// second replica keeps rotating a family, then to 4, then back to a plain
// table: every row is kept as it was, the schema a migration sees stays
// the same (columns, constraints, index names and definitions), a second
// conversion to the same shape does nothing, and both replicas keep
// working throughout.
func TestPartitionFamilies(t *testing.T) {
	url := pgtest.New(t)
	ss := twoStoresOn(t, url)
	if err := ss[0].CreateClient(ctx, client("c")); err != nil {
		t.Fatal(err)
	}
	u, err := ss[0].CreateUser(ctx, data.User{Email: "p@example.com", Username: "p", CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	rotate := func(s *postgres.Store, id string, gen int) error {
		_, err := s.RotateRefreshToken(ctx, id, matching(data.Hash(fmt.Sprintf("%s-rt%d", id, gen)), func(f data.Family) (data.Family, error) {
			f.TokenHash, f.PrevHash = data.Hash(fmt.Sprintf("%s-rt%d", id, gen+1)), f.TokenHash
			f.Generation++
			f.RotatedAt = t0.Add(time.Duration(gen+1) * time.Minute)
			return f, nil
		}))
		return err
	}
	const families = 300
	for i := range families {
		id := fmt.Sprintf("fam%03d", i)
		code := data.AuthCode{Hash: data.AuthCodeKey("oauthd_ac_" + id), ClientID: "c", UserID: u.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		if err := ss[i%2].CreateAuthCode(ctx, code); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ss[i%2].ExchangeAuthCode(ctx, code.Hash, func(data.AuthCode) (data.Family, error) {
			return data.Family{ID: id, ClientID: "c", UserID: u.ID, Scopes: []string{"BOOKING_READ"}, TokenHash: data.Hash(id + "-rt0"),
				CreatedAt: t0, RotatedAt: t0, ExpiresAt: t0.Add(time.Duration(i+1) * time.Hour), AbsoluteExp: t0.Add(48 * time.Hour)}, nil
		}); err != nil {
			t.Fatal(err)
		}
		for gen := range i % 4 { // rotated 0–3 times
			if err := rotate(ss[gen%2], id, gen); err != nil {
				t.Fatal(err)
			}
		}
		if i%10 == 9 { // revoked: a tombstone
			if err := ss[i%2].DeleteFamily(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantFams, wantTombs := familyRows(t, url)
	wantSchema := familiesSchema(t, url)
	if len(wantFams) != families-families/10 || len(wantTombs) != families/10 {
		t.Fatalf("seeded %d families and %d tombstones", len(wantFams), len(wantTombs))
	}

	// A second replica rotates "live" without pause meanwhile; every
	// rotation must succeed, in order.
	const live = "fam000"
	var gen atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var rotErr error
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			g := int(gen.Load())
			if err := rotate(ss[i%2], live, g); err != nil {
				rotErr = fmt.Errorf("rotation %d of %s: %w", g, live, err)
				return
			}
			gen.Add(1)
		}
	})
	stopped := false
	stopRotating := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopRotating()
	waitRotations := func(n int64) {
		t.Helper()
		want := gen.Load() + n
		for deadline := time.Now().Add(10 * time.Second); gen.Load() < want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) || rotErr != nil {
				t.Fatalf("the rotating replica is stuck at %d (%v)", gen.Load(), rotErr)
			}
		}
	}
	waitRotations(5)
	var shapes []string
	for _, n := range []int{16, 16, 4, 0, 0} {
		r, err := postgres.PartitionFamilies(ctx, url, n, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("PartitionFamilies(%d): %v", n, err)
		}
		shape, err := postgres.FamiliesShape(ctx, url)
		if err != nil || shape.Partitions != n {
			t.Fatalf("after PartitionFamilies(%d): shape %+v, %v", n, shape, err)
		}
		if again := r.From.Partitions == n; r.Converted == again || (r.Converted && r.Families != int64(len(wantFams))) {
			t.Fatalf("PartitionFamilies(%d) = %+v; want a conversion of %d families exactly when the shape differs", n, r, len(wantFams))
		}
		shapes = append(shapes, fmt.Sprintf("%d→%d converted %v", r.From.Partitions, r.To.Partitions, r.Converted))
		waitRotations(5) // the replicas work on the new table
		if got := familiesSchema(t, url); !slices.Equal(got, wantSchema) {
			t.Fatalf("after PartitionFamilies(%d) the schema is\n%s\nwant\n%s", n, strings.Join(got, "\n"), strings.Join(wantSchema, "\n"))
		}
	}
	stopRotating()
	if rotErr != nil {
		t.Fatal(rotErr)
	}
	t.Logf("%s; %d rotations of %s meanwhile", strings.Join(shapes, ", "), gen.Load(), live)
	gotFams, gotTombs := familyRows(t, url)
	if !slices.Equal(gotTombs, wantTombs) {
		t.Fatalf("tombstones changed:\n%v\nwant\n%v", gotTombs, wantTombs)
	}
	if len(gotFams) != len(wantFams) {
		t.Fatalf("%d families after, %d before", len(gotFams), len(wantFams))
	}
	for i := range gotFams {
		if i > 0 && gotFams[i] != wantFams[i] { // fam000 was rotated meanwhile
			t.Fatalf("family %d changed:\n%s\nwant\n%s", i, gotFams[i], wantFams[i])
		}
	}
	f, err := ss[0].GetFamily(ctx, live)
	if err != nil || f.Generation != uint64(gen.Load()) {
		t.Fatalf("%s: generation %d, %v; want %d (every rotation kept)", live, f.Generation, err, gen.Load())
	}
	if got := shapes; !slices.Equal(got, []string{"0→16 converted true", "16→16 converted false", "16→4 converted true", "4→0 converted true", "0→0 converted false"}) {
		t.Fatalf("conversions: %v", got)
	}
}

// TestPartitionFamiliesRefuses: a number of partitions out of bounds, and
// a database not at this build's schema version, are refused and left as
// they are.
func TestPartitionFamiliesRefuses(t *testing.T) {
	url := pgtest.New(t)
	for _, n := range []int{-1, 1, 257} {
		if _, err := postgres.PartitionFamilies(ctx, url, n, nil); !errors.Is(err, postgres.ErrPartitions) {
			t.Errorf("PartitionFamilies(%d) = %v; want ErrPartitions", n, err)
		}
	}
	if _, err := postgres.PartitionFamilies(ctx, url, 8, nil); !errors.Is(err, postgres.ErrSchemaOld) {
		t.Errorf("PartitionFamilies on an empty database = %v; want ErrSchemaOld", err)
	}
}

// TestPartitionPruning: on the partitioned schema, the statements by
// family ID touch one partition, also as generic plans (prepared
// statements after five executions), where pruning happens at execution.
func TestPartitionPruning(t *testing.T) {
	url := partitioned(16)(t)
	open(t, url) // the schema, and a store to write through
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// One transaction: through a transaction pool (OAUTHD_TEST_PGBOUNCER)
	// the session's prepared statement lasts no longer.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SELECT body FROM families WHERE id = $1",
		"UPDATE families SET version = version + 1, expires_ns = 1, gc_ns = least(gc_ns, 1), body = '{}' WHERE id = $1 AND version = 1",
		"DELETE FROM families WHERE id = $1 AND version = 1",
	} {
		if _, err := tx.Exec(ctx, "PREPARE q AS "+q); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE q('x')")
		if err != nil {
			t.Fatal(err)
		}
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(plan, "\n")
		if !strings.Contains(text, "Subplans Removed: 15") {
			t.Errorf("%s: generic plan prunes no partition at execution:\n%s", q, text)
		}
		t.Logf("%s:\n%s", q, text)
		if _, err := tx.Exec(ctx, "DEALLOCATE q"); err != nil {
			t.Fatal(err)
		}
	}
}
