package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"oauthd/cmd/internal/clitext"
	"oauthd/cmd/internal/wiring"
	"oauthd/cmd/oauthd-bench/internal/loadgen"
)

// emitReport is what --emit-tokens prints.
type emitReport struct {
	ClientID     string      `json:"client_id"`
	ClientSecret string      `json:"client_secret"`
	TokensFile   string      `json:"tokens_file"`
	Grants       int         `json:"grants"`
	DB           string      `json:"db"`
	Seed         *seedReport `json:"seed,omitempty"`
}

// runEmit seeds grants into --db through an in-process server and writes
// the refresh tokens.
func (o *benchOptions) runEmit(ctx context.Context, logger *slog.Logger, root *wiring.Globals, stdout io.Writer) error {
	n := o.grants
	if n == 0 {
		n = o.concurrency
	}
	mk, err := root.MasterKey()
	if err != nil {
		return err
	}
	s, err := serveBench(ctx, logger, root.DB, mk, benchGrantWorkers)
	if err != nil {
		return err
	}
	var seededGrants seeded
	var sr *seedReport
	if o.seed > 0 {
		seededGrants, sr, err = o.seedLarge(ctx, s, n)
	} else {
		seededGrants, err = seedBench(ctx, s, n)
	}
	s.stop(ctx, logger)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if err := loadgen.WriteTokens(o.emitTokens, seededGrants.tokens); err != nil {
		return err
	}
	rep := emitReport{ClientID: seededGrants.clientID, ClientSecret: seededGrants.clientSecret, TokensFile: o.emitTokens, Grants: n, DB: root.DB, Seed: sr}
	if o.json {
		return clitext.JSON(stdout, rep)
	}
	kv := []string{"client_id", rep.ClientID, "client_secret", rep.ClientSecret, "tokens_file", rep.TokensFile,
		"grants", strconv.Itoa(n), "db", rep.DB}
	if sr != nil {
		kv = append(kv, "seeded", strconv.Itoa(sr.Families), "seed_s", fmt.Sprintf("%.1f", sr.Seconds),
			"families_per_s", fmt.Sprintf("%.0f", sr.PerS), "bulk", strconv.FormatBool(sr.Bulk), "grants_s", fmt.Sprintf("%.1f", sr.GrantsSeconds), "heap_mib", fmt.Sprintf("%.1f", sr.HeapMiB))
		if o.expireShare > 0 {
			kv = append(kv, "gc_s", fmt.Sprintf("%.2f", sr.GCSeconds), "gc_families", strconv.Itoa(sr.GCFamilies), "gc_auth_codes", strconv.Itoa(sr.GCAuthCodes),
				"gc_idle_s", fmt.Sprintf("%.2f", sr.GCIdleSeconds))
		}
	}
	return clitext.Fields(stdout, kv...)
}

// seedLarge makes n grants through the real path (benchGrants) and o.seed
// families directly through the store (seedFiller) in slices around up to
// benchSeedGroups groups of them, so the real ones lie spread among the
// seeded ones.
func (o *benchOptions) seedLarge(ctx context.Context, s *benchServer, n int) (seeded, *seedReport, error) {
	sd, err := seedClient(ctx, s)
	if err != nil {
		return seeded{}, nil, err
	}
	sd.tokens = make([]string, n)
	bulk, _ := s.w.DB.Store.(familySeeder)
	groups := min(n, benchSeedGroups)
	now, t0 := time.Now(), time.Now()
	var grantsTime time.Duration
	const firstUser = 1 << 40 // far above the IDs of real users
	done := 0
	for k := 0; k <= groups; k++ {
		size := o.seed / (groups + 1)
		if k == groups {
			size = o.seed - done
		}
		if err := seedFiller(ctx, s.w.Store, bulk, sd.clientID, firstUser, done, size, o.expireShare, now); err != nil {
			return seeded{}, nil, err
		}
		done += size
		if k < groups {
			g0 := time.Now()
			if err := benchGrants(ctx, s, &sd, k*n/groups, (k+1)*n/groups); err != nil {
				return seeded{}, nil, err
			}
			grantsTime += time.Since(g0)
		}
	}
	sec := time.Since(t0).Seconds()
	r := &seedReport{Families: o.seed, Seconds: sec, PerS: float64(o.seed) / (sec - grantsTime.Seconds()),
		GrantsSeconds: grantsTime.Seconds(), Bulk: bulk != nil, HeapMiB: heapMiB()}
	if o.expireShare > 0 {
		if err := gcSeeded(ctx, s.w.Store, now, r); err != nil {
			return seeded{}, nil, err
		}
	}
	return sd, r, nil
}
