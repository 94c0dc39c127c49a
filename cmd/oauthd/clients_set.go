package main

import (
	"context"

	"github.com/spf13/cobra"

	"oauthd/issuer/admin"
)

func newClientsSetCommand(o *rootOptions) *cobra.Command {
	var dpop, par bool
	var owner string
	var cmd *cobra.Command
	cmd = clientCommand(o, "set CLIENT_ID [--dpop-bound-access-tokens=BOOL] [--require-par=BOOL] [--owner USER]",
		"Set a client's protections (DPoP-bound tokens, RFC 9449; pushed authorization requests, RFC 9126) or its owner", exactArgs("CLIENT_ID"),
		func(ctx context.Context, svc admin.Service, args []string) (admin.ClientView, error) {
			var opts admin.ClientOptions
			if cmd.Flags().Changed("dpop-bound-access-tokens") {
				opts.DPoPBoundAccessTokens = &dpop
			}
			if cmd.Flags().Changed("require-par") {
				opts.RequirePAR = &par
			}
			if cmd.Flags().Changed("owner") {
				opts.Owner = &owner
			}
			return svc.SetClientOptions(ctx, args[0], opts)
		})
	cmd.Long = "Set a client's protections. They apply at once (the operator is the reviewer); an owner turning one off in the settings pages waits for review.\n" +
		"--dpop-bound-access-tokens=true: every token request of the client must carry a DPoP proof, so all its tokens are bound to its key.\n" +
		"--require-par=true: its authorization requests must be pushed to /v2/auth/oauth2/par first.\n" +
		"--owner USER: the client belongs to that user (ID, email or username, resolved once to the ID): how an unclaimed client gets an owner."
	cmd.Flags().BoolVar(&dpop, "dpop-bound-access-tokens", false, "require DPoP proofs at the token endpoint (dpop_bound_access_tokens)")
	cmd.Flags().BoolVar(&par, "require-par", false, "require pushed authorization requests (require_pushed_authorization_requests)")
	cmd.Flags().StringVar(&owner, "owner", "", "give the client to this user (ID, email or username)")
	return cmd
}
