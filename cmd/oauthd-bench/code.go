package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"

	"oauthd/cmd/oauthd-bench/internal/loadgen"
	"oauthd/data"
)

// runCode measures authorization_code exchanges over loopback HTTP against
// refresh grants (loadgen's CodeVsRefresh), the codes of each exchange
// slice stored by mintCodes just before it.
func (o *benchOptions) runCode(ctx context.Context, s *benchServer, sd seeded, progress io.Writer) (loadgen.CodeReport, error) {
	return s.endpoint(sd).CodeVsRefresh(ctx, loadgen.CodeRun{
		Tokens: sd.tokens, Workers: o.concurrency, Duration: o.duration, RedirectURI: benchRedirectURI,
		Mint:     func(ctx context.Context, n int) ([]loadgen.Code, error) { return mintCodes(ctx, s, sd, n) },
		Progress: progress,
	})
}

// mintCodes stores n authorization codes for the seeded client and user,
// as issuer Approve builds them (PKCE S256, the bench redirect URI and
// scopes, expiring after a minute), 64 writes at a time so that they share
// fsyncs. Approve itself also rewrites the user's consent record, one
// bbolt transaction each, which would make minting a slice's codes take
// longer than the codes live.
func mintCodes(ctx context.Context, s *benchServer, sd seeded, n int) ([]loadgen.Code, error) {
	out := make([]loadgen.Code, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				code, verifier := data.NewAuthCode(time.Now()), oauth2.GenerateVerifier()
				now := time.Now().UTC()
				err := s.w.Store.CreateAuthCode(ctx, data.AuthCode{
					Hash: data.AuthCodeKey(code), ClientID: sd.clientID, UserID: sd.users[0], RedirectURI: benchRedirectURI,
					Scopes: []string{"PROFILE_READ", "BOOKING_READ"}, CodeChallenge: oauth2.S256ChallengeFromVerifier(verifier),
					CreatedAt: now, ExpiresAt: now.Add(time.Minute),
				})
				if err != nil {
					errs <- fmt.Errorf("mint code %d: %w", i, err)
					return
				}
				out[i] = loadgen.Code{Code: code, Verifier: verifier}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	return out, ctx.Err()
}
