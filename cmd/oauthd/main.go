// Command oauthd is the OAuth 2.0 authorization server of the scheduling
// API and its operator command line. See README.md.
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
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		os.Exit(1)
	}
}

// run executes the command line args and reports an error on stderr; the
// returned error only decides the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := NewRootCommand()
	cmd.SetArgs(args)
	cmd.SetIn(stdin)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	if err := cmd.ExecuteContext(ctx); err != nil {
		clitext.PrintError(stderr, "oauthd", err)
		return err
	}
	return nil
}
