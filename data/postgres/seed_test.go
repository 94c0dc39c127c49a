package postgres_test

import (
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"oauthd/data"
	"oauthd/data/datatest"
	"oauthd/data/postgres/pgtest"
)

// TestSeedFamilies: the benchmark-only bulk path writes what the code
// exchange writes (datatest.RunSeedFamiliesTest), down to the rows: every
// column of auth_codes and families, body included, is the same.
func TestSeedFamilies(t *testing.T) {
	datatest.RunSeedFamiliesTest(t, func(t *testing.T) data.Store { return open(t, pgtest.New(t)) })
	if t.Failed() {
		return
	}
	// Fresh databases: the rows as written, before any rotation or sweep.
	var rows [2][]string
	fams, codes := datatest.SeedInputs()
	for i := range 2 {
		url := pgtest.New(t)
		s := open(t, url)
		if i == 0 {
			datatest.ExchangeAll(t, s, fams, codes)
		} else if err := s.SeedFamilies(ctx, fams, codes); err != nil {
			t.Fatal(err)
		}
		rows[i] = dumpRows(t, url)
	}
	if len(rows[0]) != 2*len(fams) || !reflect.DeepEqual(rows[1], rows[0]) {
		t.Errorf("seeded rows\n%q\nwant those of the exchange\n%q", rows[1], rows[0])
	}
}

// dumpRows reads every column of every row of auth_codes and families as text.
func dumpRows(t *testing.T, url string) []string {
	t.Helper()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var out []string
	for _, q := range []string{"SELECT a::text FROM auth_codes a ORDER BY hash", "SELECT f::text FROM families f ORDER BY id"} {
		r, err := c.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		s, err := pgx.CollectRows(r, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s...)
	}
	return out
}
