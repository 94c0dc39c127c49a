package main

import "github.com/spf13/cobra"

// addGateway registers the gateway command (cmd/oauthd/gateway.go).
func addGateway(root *cobra.Command, o *rootOptions) {
	root.AddCommand(newGatewayCommand(o))
}
