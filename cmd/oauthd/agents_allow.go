package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/clitext"
	"oauthd/issuer/admin"
)

func newAgentsAllowCommand(o *rootOptions) *cobra.Command {
	var asJSON bool
	var scopes []string
	cmd := &cobra.Command{
		Use:   "allow HOST --scope SCOPE[,SCOPE...]",
		Short: "Let the AI assistants of HOST (their client ID metadata documents) ask users for these scopes; again to change them",
		Example: "  oauthd agents allow claude.ai --scope PROFILE_READ,BOOKING_READ,BOOKING_WRITE\n" +
			"  oauthd agents allow mcp.example.com:8443 --scope PROFILE_READ",
		Args: exactArgs("HOST"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				h, err := svc.AllowAgentHost(ctx, args[0], scopes)
				if err != nil {
					return err
				}
				if asJSON {
					return clitext.JSON(cmd.OutOrStdout(), h)
				}
				return clitext.Fields(cmd.OutOrStdout(), "host", h.Host, "scopes", strings.Join(h.Scopes, ","), "allowed_at", fmtTime(h.AllowedAt))
			})
		},
	}
	cmd.Flags().StringArrayVar(&scopes, "scope", nil, "a scope, or a comma/space-separated list (repeatable; at least one): the most the host's assistants may ask for")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
