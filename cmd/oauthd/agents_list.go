package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"oauthd/issuer/admin"
)

func newAgentsListCommand(o *rootOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the hosts whose AI assistants are allowed, with their scopes",
		Example: "  oauthd agents list --json",
		Args:    exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				hs, err := svc.ListAgentHosts(ctx)
				if err != nil {
					return err
				}
				return printList(cmd.OutOrStdout(), hs, asJSON, []string{"HOST", "SCOPES", "ALLOWED AT"},
					func(h admin.AgentHostView) []string {
						return []string{h.Host, strings.Join(h.Scopes, ","), fmtTime(h.AllowedAt)}
					})
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
