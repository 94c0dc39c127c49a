package main

import (
	"github.com/spf13/cobra"
)

func newUsersCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "users", Short: "Manage platform users (who log in and consent)"}
	cmd.AddCommand(newUsersAddCommand(o), newUsersListCommand(o), newUsersImportCommand(o),
		newUsersStateCommand(o, "disable"), newUsersStateCommand(o, "enable"), newUsersAppsCommand(o))
	return cmd
}
