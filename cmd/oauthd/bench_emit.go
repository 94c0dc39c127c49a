package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"oauthd/cmd/oauthd/internal/loadgen"
)

// emitReport is what --emit-tokens prints.
type emitReport struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	TokensFile   string `json:"tokens_file"`
	Grants       int    `json:"grants"`
	DB           string `json:"db"`
}

// runEmit seeds grants into --db through an in-process server and writes
// the refresh tokens.
func (o *benchOptions) runEmit(ctx context.Context, logger *slog.Logger, root *rootOptions, stdout io.Writer) error {
	n := o.grants
	if n == 0 {
		n = o.concurrency
	}
	mk, err := root.masterKey()
	if err != nil {
		return err
	}
	s, err := serveBench(ctx, logger, root.db, mk, 4)
	if err != nil {
		return err
	}
	seededGrants, err := seedBench(ctx, s, n)
	s.stop(ctx, logger)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if err := loadgen.WriteTokens(o.emitTokens, seededGrants.tokens); err != nil {
		return err
	}
	rep := emitReport{ClientID: seededGrants.clientID, ClientSecret: seededGrants.clientSecret, TokensFile: o.emitTokens, Grants: n, DB: root.db}
	if o.json {
		return printJSON(stdout, rep)
	}
	return fields(stdout, "client_id", rep.ClientID, "client_secret", rep.ClientSecret, "tokens_file", rep.TokensFile,
		"grants", strconv.Itoa(n), "db", rep.DB)
}
