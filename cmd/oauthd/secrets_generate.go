package main

import (
	"context"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/clitext"
	"oauthd/issuer/admin"
)

func newSecretsGenerateCommand(o *rootOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "generate CLIENT_ID",
		Short: "Generate a new secret (the older one keeps working); refused when 2 are active",
		Args:  exactArgs("CLIENT_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				s, err := svc.GenerateSecret(ctx, args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return clitext.JSON(cmd.OutOrStdout(), s)
				}
				if err := clitext.Fields(cmd.OutOrStdout(), "secret_id", s.SecretID, "client_secret", s.ClientSecret); err != nil {
					return err
				}
				clitext.Textf(cmd.OutOrStdout(), "\nStore the client secret now: it is shown only once.\n")
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
