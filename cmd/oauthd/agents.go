package main

import (
	"github.com/spf13/cobra"
)

func newAgentsCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "Review AI assistants by host: the clients identified by a client ID metadata document (docs/AGENTS.md)",
		Long: `An AI assistant identifies itself with a client ID metadata document: its
client_id is an https URL on its host. No such client can sign a user in
until the operator allows its host (agents allow), with the scopes its
clients may ask for; users then decide app by app on the consent page.
agents deny removes the permission and revokes every grant of every client
on that host.`,
	}
	cmd.AddCommand(newAgentsAllowCommand(o), newAgentsListCommand(o), newAgentsDenyCommand(o))
	return cmd
}
