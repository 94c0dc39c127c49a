// Command oauthd-bench is oauthd's load generator: it measures the token
// endpoint (refresh grants, code exchanges), access-token verification and
// the gateway on this machine, against the real server wired as `oauthd
// serve` wires it (cmd/internal/wiring), in-process or running. It is a
// command of its own so that the product binary, oauthd, carries none of
// it (docs/PERFORMANCE.md):
//
//	go run ./cmd/oauthd-bench -c 16 -d 10s
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"oauthd/cmd/internal/clitext"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		os.Exit(1)
	}
}

// run executes the command line args and reports an error on stderr; the
// returned error only decides the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := newRootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	if err := cmd.ExecuteContext(ctx); err != nil {
		clitext.PrintError(stderr, "oauthd-bench", err)
		return err
	}
	return nil
}
