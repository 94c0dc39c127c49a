package main

import (
	"context"

	"github.com/spf13/cobra"

	"oauthd/issuer/admin"
)

func newClientsScopesSetCommand(o *rootOptions) *cobra.Command {
	var force bool
	set := clientCommand(o, "set CLIENT_ID SCOPE... [--force]",
		"Set the scopes; on a legacy client this is the migration to a scoped client", minArgs("CLIENT_ID", "SCOPE"),
		func(ctx context.Context, svc admin.Service, args []string) (admin.ClientView, error) {
			if force {
				return svc.ForceScopes(ctx, args[0], args[1:])
			}
			return svc.SetScopes(ctx, args[0], args[1:])
		})
	set.Long = "Set the scopes; they apply at once (the operator is the reviewer). Removing a scope reaches existing grants at their next refresh.\n" +
		"On a legacy client this is the migration to a scoped client: refused while `oauthd clients show` says migration_safe: false\n" +
		"(recent authorization requests came without a scope parameter and would fail after it), unless --force is given.\n\n" + scopeHelp()
	set.Flags().BoolVar(&force, "force", false, "migrate a legacy client even though recent authorization requests came without scope")
	return set
}
