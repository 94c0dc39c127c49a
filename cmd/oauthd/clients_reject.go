package main

import (
	"context"

	"github.com/spf13/cobra"

	"oauthd/issuer/admin"
)

func newClientsRejectCommand(o *rootOptions) *cobra.Command {
	var reason, revision string
	cmd := clientCommand(o, "reject CLIENT_ID --reason TEXT [--revision R]", "Reject a client, or an approved client's pending change, with a reason", exactArgs("CLIENT_ID"),
		func(ctx context.Context, svc admin.Service, args []string) (admin.ClientView, error) {
			if revision != "" {
				return svc.RejectRevision(ctx, args[0], reason, revision)
			}
			return svc.RejectClient(ctx, args[0], reason)
		})
	cmd.Flags().StringVar(&reason, "reason", "", "why the client is rejected (required)")
	cmd.Flags().StringVar(&revision, "revision", "", "reject only if the client is still at this revision (from `oauthd clients show`): a retry, or a change withdrawn meanwhile, cannot reject the whole client")
	_ = cmd.MarkFlagRequired("reason")
	return cmd
}
