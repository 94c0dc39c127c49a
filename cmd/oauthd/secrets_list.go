package main

import (
	"context"

	"github.com/spf13/cobra"

	"oauthd/issuer/admin"
)

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
