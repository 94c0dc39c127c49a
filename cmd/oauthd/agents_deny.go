package main

import (
	"context"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/clitext"
	"oauthd/issuer/admin"
)

func newAgentsDenyCommand(o *rootOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: "deny HOST",
		Short: "Stop allowing the AI assistants of HOST: the permission goes and every grant of every client on that host " +
			"is revoked (refresh fails at once; access tokens stop at the server's checks and, within the revoked-grants feed's interval, at the gateways)",
		Example: "  oauthd agents deny claude.ai",
		Args:    exactArgs("HOST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				r, err := svc.DenyAgentHost(ctx, args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return clitext.JSON(cmd.OutOrStdout(), r)
				}
				return clitext.Fields(cmd.OutOrStdout(), "host", r.Host, "clients", strings.Join(r.Clients, ","),
					"grants_revoked", strconv.Itoa(r.GrantsRevoked))
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
