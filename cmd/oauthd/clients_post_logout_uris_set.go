package main

import (
	"context"

	"github.com/spf13/cobra"

	"oauthd/issuer/admin"
)

// newClientsPostLogoutURIsCommand is the `clients post-logout-uris` group.
func newClientsPostLogoutURIsCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "post-logout-uris", Short: "Set where a client's users may land after signing out (OpenID Connect RP-Initiated Logout)"}
	cmd.AddCommand(newClientsPostLogoutURIsSetCommand(o))
	return cmd
}

func newClientsPostLogoutURIsSetCommand(o *rootOptions) *cobra.Command {
	cmd := clientCommand(o, "set CLIENT_ID [URI...]", "Replace the post-logout redirect URIs (up to 10; none removes them all)", minArgs("CLIENT_ID"),
		func(ctx context.Context, svc admin.Service, args []string) (admin.ClientView, error) {
			return svc.SetPostLogoutRedirectURIs(ctx, args[0], args[1:])
		})
	cmd.Long = "Replace the post-logout redirect URIs of a client: where the end-session endpoint ({app_url}/auth/logout)\n" +
		"may send the browser after signing the user out, when the application sends one of them as\n" +
		"post_logout_redirect_uri with an id_token_hint it was issued. Matched exactly, like redirect URIs;\n" +
		"https, or http on a loopback host. The change applies at once (docs/OIDC.md)."
	return cmd
}
