package main

import (
	"context"

	"github.com/spf13/cobra"

	"oauthd/issuer/admin"
)

func newClientsShowCommand(o *rootOptions) *cobra.Command {
	return clientCommand(o, "show CLIENT_ID", "Show a client (secret IDs, never secrets; legacy usage counts)", exactArgs("CLIENT_ID"),
		func(ctx context.Context, svc admin.Service, args []string) (admin.ClientView, error) {
			return svc.ShowClient(ctx, args[0])
		})
}
