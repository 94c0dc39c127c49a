package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"oauthd/cmd/internal/backend"
	"oauthd/cmd/oauthd-bench/internal/loadgen"
	"oauthd/data/postgres/pgtest"
)

// TestBenchSeedThenTarget runs the large-database path at a small N on
// both backends: --seed writes the families through the store (on
// PostgreSQL through its bulk SeedFamilies; the expiring share is swept:
// exactly that share and every code's tombstone go), the real grants lie
// among them rather than after them, and the refresh workload drives the
// real grants on the seeded database: 2 workers rotating over all 8
// chains, every chain used, and the newest tokens written back to the
// file (a second run on them finds every chain alive).
func TestBenchSeedThenTarget(t *testing.T) {
	for _, kind := range []string{"bbolt", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			c := newBench(t)
			if kind == "postgres" {
				if testing.Short() {
					t.Skip("-short: starts PostgreSQL")
				}
				c = &bench{t: t, db: pgtest.New(t)}
			}
			const seed, grants = 2000, 8
			toks := filepath.Join(t.TempDir(), "toks.txt")
			var em emitReport
			oneJSON(t, c.ok("--emit-tokens", toks, "--grants", "8", "--seed", "2000", "--expire-share", "0.1", "--json"), &em)
			if em.Seed == nil || em.Seed.Families != seed || em.Seed.PerS <= 0 || em.Seed.GCIdleSeconds <= 0 || em.Seed.GrantsSeconds <= 0 {
				t.Fatalf("emit report %+v; want the seed's figures", em)
			}
			if !em.Seed.Bulk {
				t.Errorf("seed bulk = false on %s; want the backend's SeedFamilies", kind)
			}
			// i%1000 < 100 for i in [0, 2000): 200 families; the codes: every
			// seeded one and the real grants' (a minute's life).
			if em.Seed.GCFamilies != seed/10 || em.Seed.GCAuthCodes != seed+grants {
				t.Errorf("sweep removed %d families and %d codes; want %d and %d", em.Seed.GCFamilies, em.Seed.GCAuthCodes, seed/10, seed+grants)
			}

			ctx := t.Context()
			logger := slog.New(slog.DiscardHandler)
			db, err := backend.Open(ctx, c.db, backend.ForCLIRead, logger)
			if err != nil {
				t.Fatal(err)
			}
			fams, err := db.ListFamilies(ctx, em.ClientID)
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			if len(fams) != seed-seed/10+grants {
				t.Fatalf("%d families after the sweep; want %d", len(fams), seed-seed/10+grants)
			}
			// Family IDs sort by time: the first real grant comes after a
			// slice of seeded ones and well before the end.
			first := -1
			for i, f := range fams {
				if f.UserID < 1<<40 {
					first = i
					break
				}
			}
			if first < 100 || first > len(fams)/2 {
				t.Errorf("first real family at %d of %d; want it among the seeded ones", first, len(fams))
			}

			srv, err := startBenchServer(ctx, logger, c.db)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.stop(context.WithoutCancel(ctx), logger)
			before, err := loadgen.ReadTokens(toks)
			if err != nil {
				t.Fatal(err)
			}
			for run := range 2 {
				var rep loadgen.RefreshReport
				oneJSON(t, c.ok("--target", srv.w.ListenURL+benchTokenPath, "--client-id", em.ClientID, "--client-secret", em.ClientSecret,
					"--tokens", toks, "-c", "2", "-d", "200ms", "--json"), &rep)
				if rep.Concurrency != 2 || rep.Chains != grants || rep.ChainsUsed != grants || rep.ChainsAlive != grants || rep.Errors != 0 || rep.OK < grants {
					t.Errorf("target run %d on the seeded database: %+v; want 2 workers over all %d chains, all alive", run+1, rep, grants)
				}
				after, err := loadgen.ReadTokens(toks)
				if err != nil {
					t.Fatal(err)
				}
				if len(after) != grants {
					t.Fatalf("run %d wrote %d tokens back; want %d", run+1, len(after), grants)
				}
				for i := range after {
					if after[i] == before[i] {
						t.Errorf("run %d: chain %d's token was not written back (unchanged)", run+1, i)
					}
				}
				before = after
			}
		})
	}
}

// TestBenchPostgres: oauthd-bench --db postgres://… drives refresh chains
// on that database (the in-process server uses it); every request succeeds,
// every chain stays alive, and the chains' families are in the database.
func TestBenchPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts PostgreSQL")
	}
	c := &bench{t: t, db: pgtest.New(t)}
	var rep loadgen.RefreshReport
	oneJSON(t, c.ok("-c", "4", "-d", "300ms", "--json"), &rep)
	if rep.Chains != 4 || rep.ChainsAlive != 4 || rep.Errors != 0 || rep.OK < 4 || rep.OK != rep.Requests {
		t.Fatalf("bench on PostgreSQL = %+v; want every request 200 and 4 chains alive", rep)
	}
	if !strings.Contains(rep.Target, "postgres://") {
		t.Fatalf("target %q does not name the database", rep.Target)
	}
	ctx := t.Context()
	db, err := backend.Open(ctx, c.db, backend.ForCLIRead, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	clients, err := db.ListClients(ctx, "")
	if err != nil || len(clients) != 1 {
		t.Fatalf("clients %v, %v; want the bench's one", clients, err)
	}
	fams, err := db.ListFamilies(ctx, clients[0].ID)
	if err != nil || len(fams) != 4 {
		t.Fatalf("%d families in the database (%v); want the bench's 4", len(fams), err)
	}
}
