package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/clitext"
	"oauthd/data/scope"
	"oauthd/issuer/admin"
)

func newClientsCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "clients", Short: "Manage OAuth clients, their secrets, scopes and redirect URIs"}
	cmd.AddCommand(
		newClientsCreateCommand(o), newClientsImportCommand(o), newClientsListCommand(o), newClientsShowCommand(o),
		newClientsApproveCommand(o), newClientsRejectCommand(o), newSecretsCommand(o),
		newClientsScopesCommand(o), newClientsRedirectURIsCommand(o), newClientsPostLogoutURIsCommand(o), newClientsSetCommand(o),
	)
	return cmd
}

// newClientsScopesCommand is the `clients scopes` group.
func newClientsScopesCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "scopes", Short: "Set a client's scopes (on a legacy client: migrate it)"}
	cmd.AddCommand(newClientsScopesSetCommand(o))
	return cmd
}

// newClientsRedirectURIsCommand is the `clients redirect-uris` group.
func newClientsRedirectURIsCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "redirect-uris", Short: "Set a client's redirect URIs"}
	cmd.AddCommand(newClientsRedirectURIsSetCommand(o))
	return cmd
}

// printClient prints a client record as JSON or as key: value lines.
func printClient(w io.Writer, c admin.ClientView, asJSON bool) error {
	if asJSON {
		return clitext.JSON(w, c)
	}
	kv := []string{
		"client_id", c.ClientID, "name", c.Name, "owner", ownerText(c), "client_type", c.ClientType, "status", c.Status,
	}
	if c.RejectReason != "" {
		kv = append(kv, "reject_reason", c.RejectReason)
	}
	kv = append(kv, "legacy", strconv.FormatBool(c.Legacy), "redirect_uris", strings.Join(c.RedirectURIs, " "))
	if len(c.PostLogoutRedirectURIs) > 0 {
		kv = append(kv, "post_logout_redirect_uris", strings.Join(c.PostLogoutRedirectURIs, " "))
	}
	if c.Legacy {
		kv = append(kv, "scopes", "(none: legacy, unrestricted)")
	} else {
		kv = append(kv, "scopes", strings.Join(c.Scopes, " "))
	}
	kv = append(kv, "grant_types", strings.Join(c.GrantTypes, " "), "token_endpoint_auth_method", c.TokenEndpointAuthMethod)
	switch {
	case c.JWKSURI != "":
		kv = append(kv, "jwks_uri", c.JWKSURI)
	case c.JWKS != "":
		kv = append(kv, "jwks", "(inline JWK set)")
	}
	ids := make([]string, 0, len(c.Secrets))
	for _, s := range c.Secrets {
		ids = append(ids, fmt.Sprintf("%s (created %s, last used %s)", s.SecretID, fmtTime(s.CreatedAt), fmtTimePtr(s.LastUsedAt)))
	}
	if len(ids) == 0 {
		ids = []string{"-"}
	}
	kv = append(kv, "secrets", strings.Join(ids, "; "), "allowed_origins", originsText(c.ClientType, c.AllowedOrigins))
	if c.DPoPBoundAccessTokens || c.RequirePAR {
		kv = append(kv, "dpop_bound_access_tokens", strconv.FormatBool(c.DPoPBoundAccessTokens),
			"require_pushed_authorization_requests", strconv.FormatBool(c.RequirePAR))
	}
	if r := c.AuthorizationRequests; r != nil {
		kv = append(kv, "authorization_requests", fmt.Sprintf("%d with scope, %d without scope (last %d days)", r.WithScope, r.WithoutScope, r.Days))
	}
	kv = append(kv, "revision", c.Revision, "created_at", fmtTime(c.CreatedAt), "updated_at", fmtTime(c.UpdatedAt))
	if p := c.PendingChange; p != nil {
		kv = append(kv, "pending_change", changeSummary(p),
			"  proposed", fmt.Sprintf("by %s at %s", p.ProposedBy, fmtTime(p.ProposedAt)),
			"  once approved", fmt.Sprintf("%s; redirect_uris %s; scopes %s; allowed_origins %s", p.ResultType, strings.Join(p.RedirectURIs, " "), strings.Join(p.Scopes, " "), originsText(p.ResultType, p.AllowedOrigins)))
	}
	if p := c.RejectedChange; p != nil {
		kv = append(kv, "rejected_change", fmt.Sprintf("%s (reason: %s)", changeSummary(p), p.RejectReason))
	}
	if err := clitext.Fields(w, kv...); err != nil {
		return err
	}
	if c.Status == "pending" {
		clitext.Textf(w, "\nThe client waits for review; approve it with `oauthd clients approve %s --revision %s` or reject it with `oauthd clients reject %s --revision %s --reason TEXT`.\n",
			c.ClientID, c.Revision, c.ClientID, c.Revision)
	}
	if c.PendingChange != nil {
		clitext.Textf(w, "\nThe owner asked for the pending change above; the client works with its approved settings until it is decided. "+
			"Apply it with `oauthd clients approve %s --revision %s`, or discard it with `oauthd clients reject %s --revision %s --reason TEXT` (the client stays approved).\n",
			c.ClientID, c.Revision, c.ClientID, c.Revision)
	}
	if c.MigrationSafe != nil {
		if *c.MigrationSafe {
			clitext.Textf(w, "\nMigration looks safe: every recent authorization request carried a scope. Save scopes with `oauthd clients scopes set %s SCOPE...`.\n", c.ClientID)
		} else {
			clitext.Textf(w, "\nNot yet safe to migrate: some recent authorization requests came without a scope parameter; saving scopes now would make them fail. Add `scope` to the authorization URL first.\n")
		}
	}
	return nil
}

// scopeHelp lists the scopes by level, for the commands' help.
func scopeHelp() string {
	var b strings.Builder
	b.WriteString("The scopes (an ORG_ scope implies the TEAM_ scope of the same suffix; docs/SCOPES.md says what each grants):\n")
	for _, lv := range []scope.Level{scope.Identity, scope.User, scope.Team, scope.Organization} {
		var names []string
		for _, s := range scope.All() {
			if s.Level == lv {
				names = append(names, s.Name)
			}
		}
		fmt.Fprintf(&b, "  %s: %s\n", lv, strings.Join(names, " "))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// changeSummary says what a pending (or rejected) change adds.
func changeSummary(p *admin.ChangeView) string {
	var parts []string
	if len(p.AddScopes) > 0 {
		parts = append(parts, "adds scopes "+strings.Join(p.AddScopes, " "))
	}
	if len(p.AddRedirectURIs) > 0 {
		parts = append(parts, "adds redirect URIs "+strings.Join(p.AddRedirectURIs, " "))
	}
	if len(p.AddPostLogoutRedirectURIs) > 0 {
		parts = append(parts, "adds post-logout redirect URIs "+strings.Join(p.AddPostLogoutRedirectURIs, " "))
	}
	if len(p.AddGrantTypes) > 0 {
		parts = append(parts, "adds grant types "+strings.Join(p.AddGrantTypes, " "))
	}
	if p.ClientType != "" {
		parts = append(parts, "makes the client "+p.ClientType)
	}
	if p.DropDPoPBoundAccessTokens {
		parts = append(parts, "stops requiring DPoP (dpop_bound_access_tokens off)")
	}
	if p.DropRequirePAR {
		parts = append(parts, "stops requiring pushed authorization requests (require_pushed_authorization_requests off)")
	}
	return strings.Join(parts, "; ")
}

// clientCommand returns a command that runs op on the Service and prints the
// client it returns (see printClient); --json prints it as JSON.
func clientCommand(o *rootOptions, use, short string, args cobra.PositionalArgs,
	op func(ctx context.Context, svc admin.Service, args []string) (admin.ClientView, error)) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				c, err := op(ctx, svc, args)
				if err != nil {
					return err
				}
				return printClient(cmd.OutOrStdout(), c, asJSON)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// originsText is how `clients show` prints a client's CORS origins.
func originsText(clientType string, origins []string) string {
	switch {
	case len(origins) > 0:
		return strings.Join(origins, " ")
	case clientType == "public":
		return "(none: no http or https redirect URI)"
	default:
		return "(none: confidential client)"
	}
}
