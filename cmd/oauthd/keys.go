package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"oauthd/issuer/admin"
	"oauthd/keys"
)

func newKeysCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "keys", Short: "Manage the JWT signing keys (next → active → retired)"}
	cmd.AddCommand(newKeysListCommand(o), newKeysRotateCommand(o), newKeysRevokeCommand(o))
	return cmd
}

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
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", res.Warning)
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), res)
				}
				retired := "-"
				if res.Retired.KID != "" {
					retired = res.Retired.KID
				}
				return fields(cmd.OutOrStdout(), "active", res.Active.KID+" ("+res.Active.Alg+")", "retired", retired, "next", res.Next.KID+" ("+res.Next.Alg+")")
			})
		},
	}
	cmd.Flags().StringVar(&alg, "alg", "", "algorithm of the new next key: ES256 (default), EdDSA or RS256")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

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
				fmt.Fprintf(cmd.OutOrStdout(), "revoked key %s\n", args[0])
				return nil
			})
		},
	}
	return cmd
}
