package main

import (
	"context"
	"fmt"
	"io"

	"oauthd/cmd/internal/clitext"
	"oauthd/cmd/oauthd-bench/internal/loadgen"
)

// runTarget drives a running server with every token of o.tokens, one
// chain each, on o.concurrency workers that rotate over the chains (each
// takes the chain idle longest: more chains than workers is the many
// distinct families of a large database), and writes the live chains'
// newest tokens back to it.
func (o *benchOptions) runTarget(ctx context.Context, stdout, stderr io.Writer) error {
	if err := loadgen.CheckLoopback(ctx, o.target); err != nil {
		return fmt.Errorf("--target %q: %w", o.target, err)
	}
	toks, err := loadgen.ReadTokens(o.tokens)
	if err != nil {
		return err
	}
	if len(toks) < o.concurrency {
		return fmt.Errorf("%s has %d tokens; --concurrency %d needs at least that many (seed more with --emit-tokens --grants N)", o.tokens, len(toks), o.concurrency)
	}
	hc := loadgen.NewHTTPClient(o.concurrency)
	defer hc.CloseIdleConnections()
	ep := loadgen.Endpoint{HTTP: hc, TokenURL: o.target, ClientID: o.clientID, ClientSecret: o.clientSecret}
	rep, live, _ := ep.Refresh(ctx, toks, o.concurrency, o.duration, loadgen.Progress{W: clitext.Lines{W: stderr}, Every: o.progress})
	rep.Target = o.target
	// Dead chains are dropped.
	if err := loadgen.WriteTokens(o.tokens, live); err != nil {
		return err
	}
	return o.print(stdout, rep)
}
