package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"oauthd/data/scope"
	"oauthd/issuer/admin"
)

func newClientsCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "clients", Short: "Manage OAuth clients, their secrets, scopes and redirect URIs"}
	cmd.AddCommand(
		newClientsCreateCommand(o), newClientsImportCommand(o), newClientsListCommand(o), newClientsShowCommand(o),
		newClientsApproveCommand(o), newClientsRejectCommand(o), newSecretsCommand(o),
		newClientsScopesCommand(o), newClientsRedirectURIsCommand(o), newClientsSetCommand(o),
	)
	return cmd
}

func newClientsCreateCommand(o *rootOptions) *cobra.Command {
	var (
		in     admin.NewClient
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:     "create --owner EMAIL --name NAME --redirect-uri URI... --scope SCOPE... [--public]",
		Short:   "Register a client (status pending until approved); prints its secret once",
		Long:    "Register a client; it stays pending until an administrator approves it.\n\n" + scopeHelp(),
		Example: "  oauthd clients create --owner dev@example.com --name 'Calendar Sync' --redirect-uri https://app.example/cb --scope PROFILE_READ,BOOKING_READ",
		Args:    exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				c, err := svc.CreateClient(ctx, in)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), c)
				}
				kv := []string{"client_id", c.ClientID}
				if c.ClientSecret != "" {
					kv = append(kv, "client_secret", c.ClientSecret, "secret_id", c.SecretID)
				}
				kv = append(kv, "status", c.Status, "client_type", c.ClientType, "name", c.Name,
					"redirect_uris", strings.Join(c.RedirectURIs, " "), "scopes", strings.Join(c.Scopes, " "))
				if err := fields(cmd.OutOrStdout(), kv...); err != nil {
					return err
				}
				if c.ClientSecret != "" {
					fmt.Fprintln(cmd.OutOrStdout(), "\nStore the client secret now: it is shown only once.")
				}
				fmt.Fprintf(cmd.OutOrStdout(), "The client is pending; approve it with `oauthd clients approve %s`.\n", c.ClientID)
				return nil
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&in.Owner, "owner", "", "email of the user who owns the client (required)")
	fs.StringVar(&in.Name, "name", "", "the client's name, shown on the consent page (required)")
	fs.StringArrayVar(&in.RedirectURIs, "redirect-uri", nil, "a redirect URI (repeatable, up to 10; https, or http on loopback)")
	fs.StringArrayVar(&in.Scopes, "scope", nil, "a scope, or a comma/space-separated list (repeatable; at least one)")
	fs.BoolVar(&in.Public, "public", false, "a public client (no secret; PKCE required)")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	for _, f := range []string{"owner", "name", "redirect-uri", "scope"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}

func newClientsImportCommand(o *rootOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Import legacy clients (no scopes, approved) from a JSON array; all or nothing",
		Long: "Import legacy clients made before scopes existed. FILE (or - for stdin) holds a JSON array of\n" +
			`{"client_id", "name", "owner", "redirect_uris", "client_secret", "client_type"}.` + "\nEither every client is imported or none is.",
		Args: exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var (
				b   []byte
				err error
			)
			if args[0] == "-" {
				b, err = io.ReadAll(cmd.InOrStdin())
			} else {
				b, err = os.ReadFile(args[0])
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", args[0], err)
			}
			var cs []admin.LegacyClient
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&cs); err != nil {
				return fmt.Errorf("%s is not a JSON array of {client_id, name, owner, redirect_uris, client_secret, client_type}: %w", args[0], err)
			}
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				ids, err := svc.ImportClients(ctx, cs)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), ids)
				}
				for _, id := range ids {
					fmt.Fprintln(cmd.OutOrStdout(), id)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the imported IDs as JSON")
	return cmd
}

func newClientsListCommand(o *rootOptions) *cobra.Command {
	var (
		status string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list [--status pending|approved|rejected]",
		Short: "List clients",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				cs, err := svc.ListClients(ctx, status)
				if err != nil {
					return err
				}
				return printList(cmd.OutOrStdout(), cs, asJSON, []string{"CLIENT ID", "NAME", "OWNER", "TYPE", "STATUS", "SCOPES"},
					func(c admin.ClientView) []string {
						scopes := strings.Join(c.Scopes, ",")
						if c.Legacy {
							scopes = "(legacy: unrestricted)"
						}
						status := c.Status
						if c.PendingChange != nil {
							status += " (change pending)"
						}
						return []string{c.ClientID, c.Name, c.Owner, c.ClientType, status, scopes}
					})
			})
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only clients in this status: pending, approved or rejected (pending also lists approved clients with a pending change)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// printClient prints a client record as JSON or as key: value lines.
func printClient(w io.Writer, c admin.ClientView, asJSON bool) error {
	if asJSON {
		return printJSON(w, c)
	}
	kv := []string{
		"client_id", c.ClientID, "name", c.Name, "owner", c.Owner, "client_type", c.ClientType, "status", c.Status,
	}
	if c.RejectReason != "" {
		kv = append(kv, "reject_reason", c.RejectReason)
	}
	kv = append(kv, "legacy", strconv.FormatBool(c.Legacy), "redirect_uris", strings.Join(c.RedirectURIs, " "))
	if c.Legacy {
		kv = append(kv, "scopes", "(none: legacy, unrestricted)")
	} else {
		kv = append(kv, "scopes", strings.Join(c.Scopes, " "))
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
	if err := fields(w, kv...); err != nil {
		return err
	}
	if c.Status == "pending" {
		fmt.Fprintf(w, "\nThe client waits for review; approve it with `oauthd clients approve %s --revision %s` or reject it with `oauthd clients reject %s --revision %s --reason TEXT`.\n",
			c.ClientID, c.Revision, c.ClientID, c.Revision)
	}
	if c.PendingChange != nil {
		fmt.Fprintf(w, "\nThe owner asked for the pending change above; the client works with its approved settings until it is decided. "+
			"Apply it with `oauthd clients approve %s --revision %s`, or discard it with `oauthd clients reject %s --revision %s --reason TEXT` (the client stays approved).\n",
			c.ClientID, c.Revision, c.ClientID, c.Revision)
	}
	if c.MigrationSafe != nil {
		if *c.MigrationSafe {
			fmt.Fprintf(w, "\nMigration looks safe: every recent authorization request carried a scope. Save scopes with `oauthd clients scopes set %s SCOPE...`.\n", c.ClientID)
		} else {
			fmt.Fprintln(w, "\nNot yet safe to migrate: some recent authorization requests came without a scope parameter; saving scopes now would make them fail. Add `scope` to the authorization URL first.")
		}
	}
	return nil
}

// scopeHelp lists the 30 scopes by level, for the commands' help.
func scopeHelp() string {
	var b strings.Builder
	b.WriteString("The scopes (an ORG_ scope implies the TEAM_ scope of the same suffix; README.md, \"Scopes\", says what each grants):\n")
	for _, lv := range []scope.Level{scope.User, scope.Team, scope.Organization} {
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

func newClientsShowCommand(o *rootOptions) *cobra.Command {
	return clientCommand(o, "show CLIENT_ID", "Show a client (secret IDs, never secrets; legacy usage counts)", exactArgs("CLIENT_ID"),
		func(ctx context.Context, svc admin.Service, args []string) (admin.ClientView, error) {
			return svc.ShowClient(ctx, args[0])
		})
}

func newClientsApproveCommand(o *rootOptions) *cobra.Command {
	var revision string
	cmd := clientCommand(o, "approve CLIENT_ID [--revision R]", "Approve a pending client so it can be used, or an approved client's pending change", exactArgs("CLIENT_ID"),
		func(ctx context.Context, svc admin.Service, args []string) (admin.ClientView, error) {
			if revision != "" {
				return svc.ApproveRevision(ctx, args[0], revision)
			}
			return svc.ApproveClient(ctx, args[0])
		})
	cmd.Flags().StringVar(&revision, "revision", "", "approve only if the client is still at this revision (from `oauthd clients show`): the owner cannot change what you reviewed in between")
	return cmd
}

func newClientsRejectCommand(o *rootOptions) *cobra.Command {
	var reason, revision string
	cmd := clientCommand(o, "reject CLIENT_ID --reason TEXT [--revision R]", "Reject a client, or an approved client's pending change, with a reason", exactArgs("CLIENT_ID"),
		func(ctx context.Context, svc admin.Service, args []string) (admin.ClientView, error) {
			if revision != "" {
				return svc.RejectRevision(ctx, args[0], reason, revision)
			}
			return svc.RejectClient(ctx, args[0], reason)
		})
	cmd.Flags().StringVar(&reason, "reason", "", "why the client is rejected (required)")
	cmd.Flags().StringVar(&revision, "revision", "", "reject only if the client is still at this revision (from `oauthd clients show`): a retry, or a change withdrawn meanwhile, cannot reject the whole client")
	_ = cmd.MarkFlagRequired("reason")
	return cmd
}

func newClientsScopesCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "scopes", Short: "Set a client's scopes (on a legacy client: migrate it)"}
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
	cmd.AddCommand(set)
	return cmd
}

func newClientsRedirectURIsCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "redirect-uris", Short: "Set a client's redirect URIs"}
	cmd.AddCommand(clientCommand(o, "set CLIENT_ID URI...", "Replace the redirect URIs (up to 10)", minArgs("CLIENT_ID", "URI"),
		func(ctx context.Context, svc admin.Service, args []string) (admin.ClientView, error) {
			return svc.SetRedirectURIs(ctx, args[0], args[1:])
		}))
	return cmd
}

func newClientsSetCommand(o *rootOptions) *cobra.Command {
	var dpop, par bool
	var cmd *cobra.Command
	cmd = clientCommand(o, "set CLIENT_ID [--dpop-bound-access-tokens=BOOL] [--require-par=BOOL]",
		"Set a client's protections: DPoP-bound tokens required (RFC 9449), pushed authorization requests required (RFC 9126)", exactArgs("CLIENT_ID"),
		func(ctx context.Context, svc admin.Service, args []string) (admin.ClientView, error) {
			var opts admin.ClientOptions
			if cmd.Flags().Changed("dpop-bound-access-tokens") {
				opts.DPoPBoundAccessTokens = &dpop
			}
			if cmd.Flags().Changed("require-par") {
				opts.RequirePAR = &par
			}
			return svc.SetClientOptions(ctx, args[0], opts)
		})
	cmd.Long = "Set a client's protections. They apply at once (the operator is the reviewer); an owner turning one off in the settings pages waits for review.\n" +
		"--dpop-bound-access-tokens=true: every token request of the client must carry a DPoP proof, so all its tokens are bound to its key.\n" +
		"--require-par=true: its authorization requests must be pushed to /v2/auth/oauth2/par first."
	cmd.Flags().BoolVar(&dpop, "dpop-bound-access-tokens", false, "require DPoP proofs at the token endpoint (dpop_bound_access_tokens)")
	cmd.Flags().BoolVar(&par, "require-par", false, "require pushed authorization requests (require_pushed_authorization_requests)")
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
