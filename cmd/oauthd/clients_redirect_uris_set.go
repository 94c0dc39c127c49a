package main

import (
	"context"

	"github.com/spf13/cobra"

	"oauthd/issuer/admin"
)

func newClientsRedirectURIsSetCommand(o *rootOptions) *cobra.Command {
	return clientCommand(o, "set CLIENT_ID URI...", "Replace the redirect URIs (up to 10)", minArgs("CLIENT_ID", "URI"),
		func(ctx context.Context, svc admin.Service, args []string) (admin.ClientView, error) {
			return svc.SetRedirectURIs(ctx, args[0], args[1:])
		})
}
