package main

import (
	"context"

	"github.com/spf13/cobra"

	"oauthd/issuer/admin"
	"oauthd/keys"
)

func newKeysListCommand(o *rootOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the signing keys",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				ks, err := svc.ListKeys(ctx)
				if err != nil {
					return err
				}
				return printList(cmd.OutOrStdout(), ks, asJSON, []string{"KID", "ALG", "STATE", "CREATED", "ACTIVATED", "RETIRED"},
					func(k keys.Info) []string {
						return []string{k.KID, k.Alg, string(k.State), fmtTime(k.CreatedAt), fmtTime(k.ActivatedAt), fmtTime(k.RetiredAt)}
					})
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
