package main

import (
	"github.com/spf13/cobra"
)

func newKeysCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "keys", Short: "Manage the JWT signing keys (next → active → retired)"}
	cmd.AddCommand(newKeysListCommand(o), newKeysRotateCommand(o), newKeysRevokeCommand(o))
	return cmd
}
