package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"oauthd/issuer/admin"
)

func newClientsListCommand(o *rootOptions) *cobra.Command {
	var (
		status, owner string
		asJSON        bool
	)
	cmd := &cobra.Command{
		Use:   "list [--status pending|approved|rejected] [--owner unclaimed|USER_ID]",
		Short: "List clients",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				cs, err := svc.ListClients(ctx, status)
				if err != nil {
					return err
				}
				if cs, err = byOwner(cs, owner); err != nil {
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
						return []string{c.ClientID, c.Name, ownerText(c), c.ClientType, status, scopes}
					})
			})
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only clients in this status: pending, approved or rejected (pending also lists approved clients with a pending change)")
	cmd.Flags().StringVar(&owner, "owner", "", "only the clients of this owner: a user ID, or unclaimed (clients whose owner named no user: give them an owner)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// byOwner keeps the clients of owner ("": all; "unclaimed"; a user ID).
func byOwner(cs []admin.ClientView, owner string) ([]admin.ClientView, error) {
	owner = strings.TrimSpace(owner)
	if owner == "" {
		return cs, nil
	}
	var id int64
	if owner != "unclaimed" {
		var err error
		if id, err = strconv.ParseInt(owner, 10, 64); err != nil || id <= 0 {
			return nil, fmt.Errorf("--owner %q: give a user ID (`oauthd users list` shows them) or unclaimed", owner)
		}
	}
	out := []admin.ClientView{}
	for _, c := range cs {
		if c.OwnerID == id {
			out = append(out, c)
		}
	}
	return out, nil
}

// ownerText is a client's owner for people: the owner's current email and
// ID, or "unclaimed" with the owner it was given.
func ownerText(c admin.ClientView) string {
	if c.AgentHost != "" {
		return "AI assistant from " + c.AgentHost
	}
	if c.OwnerID == 0 {
		return "unclaimed (was " + c.UnclaimedOwner + ")"
	}
	return fmt.Sprintf("%s (user %d)", c.Owner, c.OwnerID)
}
