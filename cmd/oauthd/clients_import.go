package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/clitext"
	"oauthd/issuer/admin"
)

func newClientsImportCommand(o *rootOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Import legacy clients (no scopes, approved) from a JSON array; all or nothing",
		Long: "Import legacy clients made before scopes existed. FILE (or - for stdin) holds a JSON array of\n" +
			`{"client_id", "name", "owner", "redirect_uris", "client_secret", "client_type"}.` + "\nEither every client is imported or none is.\n" +
			"Each owner (a user's ID, email or username) is resolved once to the user; a client whose owner names no\n" +
			"user is imported unclaimed (no one manages it in the settings pages; `clients list --owner unclaimed`).",
		Args: exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := readInput(cmd, args[0])
			if err != nil {
				return err
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
				for _, id := range ids {
					if v, err := svc.ShowClient(ctx, id); err == nil && v.OwnerID == 0 {
						clitext.Textf(cmd.ErrOrStderr(), "client %s is unclaimed: its owner %q names no user (add the user, then `oauthd clients set %s --owner USER`)\n", id, v.UnclaimedOwner, id)
					}
				}
				if asJSON {
					return clitext.JSON(cmd.OutOrStdout(), ids)
				}
				for _, id := range ids {
					clitext.Textf(cmd.OutOrStdout(), "%s\n", id)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the imported IDs as JSON")
	return cmd
}
