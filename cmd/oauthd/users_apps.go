package main

import (
	"context"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/clitext"
	"oauthd/issuer/admin"
)

func newUsersAppsCommand(o *rootOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "apps ID|EMAIL|USERNAME",
		Short: "List the apps a user allowed (their Connected apps page), with permissions and last use",
		Example: "  oauthd users apps ann@example.com\n" +
			"  oauthd users apps revoke ann@example.com CLIENT_ID",
		Args: exactArgs("ID|EMAIL|USERNAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				apps, err := svc.ListUserApps(ctx, args[0])
				if err != nil {
					return err
				}
				if len(apps) == 0 && !asJSON {
					// A lone header reads like a failed listing.
					return clitext.Textf(cmd.OutOrStdout(), "%s has allowed no apps (none has a grant or a consent for them)\n", args[0])
				}
				return printList(cmd.OutOrStdout(), apps, asJSON,
					[]string{"CLIENT ID", "NAME", "DEVELOPER", "STATUS", "PERMISSIONS", "FIRST ALLOWED", "LAST USED", "GRANTS"},
					func(a admin.AppView) []string {
						perms := strings.Join(a.Scopes, ",")
						if a.Unrestricted {
							perms = "full access (legacy)"
						}
						return []string{a.ClientID, a.Name, a.Developer, a.Status, perms,
							fmtTime(a.FirstAllowedAt), fmtTimePtr(a.LastUsedAt), strconv.Itoa(len(a.GrantIDs))}
					})
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(newUsersAppsRevokeCommand(o))
	return cmd
}

func newUsersAppsRevokeCommand(o *rootOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: "revoke ID|EMAIL|USERNAME CLIENT_ID",
		Short: "Remove one app's access for a user, as the Connected apps page does: every refresh token and " +
			"code of the pair is revoked at once and the consent forgotten (the app must ask again)",
		Example: "  oauthd users apps revoke ann@example.com 0Jx7f3kQ2bYq",
		Args:    exactArgs("ID|EMAIL|USERNAME", "CLIENT_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				r, err := svc.RevokeUserApp(ctx, args[0], args[1])
				if err != nil {
					return err
				}
				if asJSON {
					return clitext.JSON(cmd.OutOrStdout(), r)
				}
				return clitext.Fields(cmd.OutOrStdout(), "user_id", strconv.FormatInt(r.UserID, 10), "client_id", r.ClientID,
					"name", r.Name, "grants_revoked", strconv.Itoa(len(r.RevokedGrantIDs)),
					"consent_forgotten", strconv.FormatBool(r.ConsentForgotten))
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
