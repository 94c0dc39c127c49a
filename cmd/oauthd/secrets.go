package main

import (
	"github.com/spf13/cobra"
)

func newSecretsCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "secrets", Short: "Rotate client secrets (up to 2 active)"}
	cmd.AddCommand(newSecretsGenerateCommand(o), newSecretsListCommand(o), newSecretsRevokeCommand(o))
	return cmd
}
