package main

import (
	"context"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/clitext"
	"oauthd/issuer/admin"
)

func newSecretsRevokeCommand(o *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke CLIENT_ID SECRET_ID",
		Short: "Revoke a secret at once (issued tokens stay valid)",
		Args:  exactArgs("CLIENT_ID", "SECRET_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				if err := svc.RevokeSecret(ctx, args[0], args[1]); err != nil {
					return err
				}
				clitext.Textf(cmd.OutOrStdout(), "revoked secret %s of client %s\n", args[1], args[0])
				return nil
			})
		},
	}
}
