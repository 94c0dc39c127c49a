package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"oauthd/issuer/admin"
)

func newClientsListCommand(o *rootOptions) *cobra.Command {
	var (
		status string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list [--status pending|approved|rejected]",
		Short: "List clients",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				cs, err := svc.ListClients(ctx, status)
				if err != nil {
					return err
				}
				return printList(cmd.OutOrStdout(), cs, asJSON, []string{"CLIENT ID", "NAME", "OWNER", "TYPE", "STATUS", "SCOPES"},
					func(c admin.ClientView) []string {
						scopes := strings.Join(c.Scopes, ",")
						if c.Legacy {
							scopes = "(legacy: unrestricted)"
						}
						status := c.Status
						if c.PendingChange != nil {
							status += " (change pending)"
						}
						return []string{c.ClientID, c.Name, c.Owner, c.ClientType, status, scopes}
					})
			})
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only clients in this status: pending, approved or rejected (pending also lists approved clients with a pending change)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
