package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/clitext"
	"oauthd/issuer/admin"
)

type usersAddOptions struct {
	user          admin.NewUser
	passwordStdin bool
	json          bool
}

func newUsersAddCommand(o *rootOptions) *cobra.Command {
	var opts usersAddOptions
	cmd := &cobra.Command{
		Use:     "add --email E --username U --name N [--time-zone Europe/Berlin] --password-stdin",
		Short:   "Add a user; the password is read from stdin",
		Example: "  printf '%s' 'a long password' | oauthd users add --email ann@example.com --username ann --name 'Ann Lee' --password-stdin",
		Args:    exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !opts.passwordStdin {
				return errors.New("pass --password-stdin and write the password to stdin (it is never taken from the command line)")
			}
			pw, err := readPassword(cmd.InOrStdin())
			if err != nil {
				return err
			}
			opts.user.Password = pw
			return o.withService(cmd, func(ctx context.Context, svc admin.Service) error {
				u, err := svc.AddUser(ctx, opts.user)
				if err != nil {
					return err
				}
				if opts.json {
					return clitext.JSON(cmd.OutOrStdout(), u)
				}
				return clitext.Fields(cmd.OutOrStdout(), "id", strconv.FormatInt(u.ID, 10), "email", u.Email, "username", u.Username, "name", u.Name, "time_zone", u.TimeZone)
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.user.Email, "email", "", "the user's email (required)")
	fs.StringVar(&opts.user.Username, "username", "", "the login name (required)")
	fs.StringVar(&opts.user.Name, "name", "", "the display name (required)")
	fs.StringVar(&opts.user.TimeZone, "time-zone", "UTC", "IANA time zone, e.g. Europe/Berlin")
	fs.BoolVar(&opts.passwordStdin, "password-stdin", false, "read the password from stdin")
	fs.BoolVar(&opts.json, "json", false, "print the user as JSON")
	for _, f := range []string{"email", "username", "name"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}

// readPassword reads the password from r, without one trailing newline.
func readPassword(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, 4096))
	if err != nil {
		return "", fmt.Errorf("read the password from stdin: %w", err)
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if pw == "" {
		return "", errors.New("stdin held no password; pipe one in, e.g. printf '%s' \"$PASSWORD\" | oauthd users add ... --password-stdin")
	}
	if len(pw) < admin.MinPasswordLen {
		return "", fmt.Errorf("the password must be at least %d characters; choose a longer one", admin.MinPasswordLen)
	}
	return pw, nil
}
