package main

import (
	"context"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/clitext"
	"oauthd/issuer/admin"
)

func newKeysRevokeCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "revoke KID",
		Short: "Emergency: remove a key from the JWKS at once (tokens it signed stop verifying)",
		Args:  exactArgs("KID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				if err := svc.RevokeKey(ctx, args[0]); err != nil {
					return err
				}
				clitext.Textf(cmd.OutOrStdout(), "revoked key %s\n", args[0])
				return nil
			})
		},
	}
	return cmd
}
