package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/clitext"
	"oauthd/data"
	"oauthd/issuer/admin"
)

func newClientsCreateCommand(o *rootOptions) *cobra.Command {
	var (
		in       admin.NewClient
		asJSON   bool
		jwksFile string
	)
	cmd := &cobra.Command{
		Use:     "create --owner EMAIL --name NAME [--redirect-uri URI...] --scope SCOPE... [--public] [--grant-type TYPE...] [--jwks FILE | --jwks-uri URL]",
		Short:   "Register a client (status pending until approved); prints its secret once",
		Long:    "Register a client; it stays pending until an administrator approves it.\n\n" + scopeHelp(),
		Example: "  oauthd clients create --owner dev@example.com --name 'Calendar Sync' --redirect-uri https://app.example/cb --scope PROFILE_READ,BOOKING_READ",
		Args:    exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			for i, gt := range in.GrantTypes {
				in.GrantTypes[i] = data.ExpandGrantType(gt)
			}
			if jwksFile != "" {
				b, err := readInput(cmd, jwksFile)
				if err != nil {
					return err
				}
				in.JWKS = string(b)
			}
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				c, err := svc.CreateClient(ctx, in)
				if err != nil {
					return err
				}
				if asJSON {
					return clitext.JSON(cmd.OutOrStdout(), c)
				}
				kv := []string{"client_id", c.ClientID}
				if c.ClientSecret != "" {
					kv = append(kv, "client_secret", c.ClientSecret, "secret_id", c.SecretID)
				}
				kv = append(kv, "status", c.Status, "client_type", c.ClientType, "name", c.Name,
					"redirect_uris", strings.Join(c.RedirectURIs, " "), "scopes", strings.Join(c.Scopes, " "),
					"grant_types", strings.Join(c.GrantTypes, " "), "token_endpoint_auth_method", c.TokenEndpointAuthMethod)
				if err := clitext.Fields(cmd.OutOrStdout(), kv...); err != nil {
					return err
				}
				if c.ClientSecret != "" {
					clitext.Textf(cmd.OutOrStdout(), "\nStore the client secret now: it is shown only once.\n")
				}
				clitext.Textf(cmd.OutOrStdout(), "The client is pending; approve it with `oauthd clients approve %s`.\n", c.ClientID)
				return nil
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&in.Owner, "owner", "", "the user who owns the client: their ID, email or username (required); the client belongs to that user (by ID), whatever later happens to their email")
	fs.StringVar(&in.Name, "name", "", "the client's name, shown on the consent page (required)")
	fs.StringArrayVar(&in.RedirectURIs, "redirect-uri", nil, "a redirect URI (repeatable, up to 10; https, or http on loopback); required with the authorization_code grant")
	fs.StringArrayVar(&in.Scopes, "scope", nil, "a scope, or a comma/space-separated list (repeatable; at least one)")
	fs.BoolVar(&in.Public, "public", false, "a public client (no secret; PKCE required)")
	fs.StringArrayVar(&in.GrantTypes, "grant-type", nil, "a grant type the client may use (repeatable): authorization_code, refresh_token, client_credentials (confidential clients), urn:ietf:params:oauth:grant-type:device_code (or device_code; devices without a browser, RFC 8628); default authorization_code and refresh_token")
	fs.StringVar(&jwksFile, "jwks", "", "a file holding the client's public JWK set: the client authenticates with private_key_jwt (RFC 7523) and gets no secret")
	fs.StringVar(&in.JWKSURI, "jwks-uri", "", "an https URL where the client publishes its public JWK set (private_key_jwt; no secret)")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	for _, f := range []string{"owner", "name", "scope"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}
