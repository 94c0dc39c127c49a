package main

import (
	"context"
	"strconv"

	"github.com/spf13/cobra"

	"oauthd/issuer/admin"
)

func newUsersListCommand(o *rootOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List users",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				us, err := svc.ListUsers(ctx)
				if err != nil {
					return err
				}
				return printList(cmd.OutOrStdout(), us, asJSON, []string{"ID", "EMAIL", "USERNAME", "NAME", "TIME ZONE", "STATE", "EXTERNAL ID"},
					func(u admin.UserView) []string {
						state := u.State
						if u.Clash != "" {
							state += " (clash: " + u.Clash + ")"
						}
						if u.Invalid != "" {
							state += " (refused today: " + u.Invalid + ")"
						}
						return []string{strconv.FormatInt(u.ID, 10), u.Email, u.Username, u.Name, u.TimeZone, state, u.ExternalID}
					})
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
