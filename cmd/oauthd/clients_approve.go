package main

import (
	"context"

	"github.com/spf13/cobra"

	"oauthd/issuer/admin"
)

func newClientsApproveCommand(o *rootOptions) *cobra.Command {
	var revision string
	cmd := clientCommand(o, "approve CLIENT_ID [--revision R]", "Approve a pending client so it can be used, or an approved client's pending change", exactArgs("CLIENT_ID"),
		func(ctx context.Context, svc admin.Service, args []string) (admin.ClientView, error) {
			if revision != "" {
				return svc.ApproveRevision(ctx, args[0], revision)
			}
			return svc.ApproveClient(ctx, args[0])
		})
	cmd.Flags().StringVar(&revision, "revision", "", "approve only if the client is still at this revision (from `oauthd clients show`): the owner cannot change what you reviewed in between")
	return cmd
}
