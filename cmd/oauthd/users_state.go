package main

import (
	"context"
	"strconv"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/clitext"
	"oauthd/issuer/admin"
)

func newUsersStateCommand(o *rootOptions, verb string) *cobra.Command {
	var asJSON bool
	short := "Disable a user: revoke their sessions, grants and tokens at once; they cannot log in or consent"
	if verb == "enable" {
		short = "Enable a disabled user: they may log in again (revoked grants stay revoked)"
	}
	cmd := &cobra.Command{
		Use:     verb + " ID|EMAIL|USERNAME",
		Short:   short,
		Example: "  oauthd users " + verb + " ann@example.com",
		Args:    exactArgs("ID|EMAIL|USERNAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				op := svc.DisableUser
				if verb == "enable" {
					op = svc.EnableUser
				}
				u, err := op(ctx, args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return clitext.JSON(cmd.OutOrStdout(), u)
				}
				return clitext.Fields(cmd.OutOrStdout(), "id", strconv.FormatInt(u.ID, 10), "email", u.Email, "state", u.State)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the user as JSON")
	return cmd
}
