package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"oauthd/issuer/admin"
)

func newSecretsCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "secrets", Short: "Rotate client secrets (up to 2 active)"}
	cmd.AddCommand(newSecretsGenerateCommand(o), newSecretsListCommand(o), newSecretsRevokeCommand(o))
	return cmd
}

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
					return printJSON(cmd.OutOrStdout(), s)
				}
				if err := fields(cmd.OutOrStdout(), "secret_id", s.SecretID, "client_secret", s.ClientSecret); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "\nStore the client secret now: it is shown only once.")
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newSecretsListCommand(o *rootOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list CLIENT_ID",
		Short: "List the active secrets' IDs with creation and last-use times",
		Args:  exactArgs("CLIENT_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				ss, err := svc.ListSecrets(ctx, args[0])
				if err != nil {
					return err
				}
				return printList(cmd.OutOrStdout(), ss, asJSON, []string{"SECRET ID", "CREATED", "LAST USED"},
					func(s admin.SecretView) []string {
						return []string{s.SecretID, fmtTime(s.CreatedAt), fmtTimePtr(s.LastUsedAt)}
					})
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

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
				fmt.Fprintf(cmd.OutOrStdout(), "revoked secret %s of client %s\n", args[1], args[0])
				return nil
			})
		},
	}
}
