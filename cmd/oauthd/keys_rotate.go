package main

import (
	"context"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/clitext"
	"oauthd/issuer/admin"
)

func newKeysRotateCommand(o *rootOptions) *cobra.Command {
	var (
		alg    string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "rotate [--alg ES256|EdDSA|RS256]",
		Short: "Promote the next key to active, retire the active key, make a new next key",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				res, err := svc.RotateKeys(ctx, alg)
				if err != nil {
					return err
				}
				if res.Warning != "" {
					clitext.Textf(cmd.ErrOrStderr(), "warning: %s\n", res.Warning)
				}
				if asJSON {
					return clitext.JSON(cmd.OutOrStdout(), res)
				}
				retired := "-"
				if res.Retired.KID != "" {
					retired = res.Retired.KID
				}
				return clitext.Fields(cmd.OutOrStdout(), "active", res.Active.KID+" ("+res.Active.Alg+")", "retired", retired, "next", res.Next.KID+" ("+res.Next.Alg+")")
			})
		},
	}
	cmd.Flags().StringVar(&alg, "alg", "", "algorithm of the new next key: ES256 (default), EdDSA or RS256")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
