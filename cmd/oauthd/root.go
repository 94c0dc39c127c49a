package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/wiring"
)

// rootOptions are the persistent flags every command shares: the global
// settings (wiring.Globals; their variables, OAUTHD_DB, …, and file keys
// follow from their names, config.go) and --config.
type rootOptions struct {
	wiring.Globals
	config string // --config, read by configure
}

// NewRootCommand returns the oauthd command with every subcommand.
func NewRootCommand() *cobra.Command {
	o := &rootOptions{}
	root := &cobra.Command{
		Use:           "oauthd",
		Short:         "OAuth 2.0 authorization server for the scheduling API",
		Long:          "oauthd is an OAuth 2.0 authorization server (authorization code + PKCE, refresh-token rotation, scoped JWT access tokens) and its operator command line.\nRun `oauthd serve --demo` to try it.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	o.AddFlags(root.PersistentFlags())
	addGlobalFlags(root.PersistentFlags(), &o.config)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.Annotations[annSection] != "" {
			return nil // serve and gateway read their settings themselves (configure)
		}
		_, err := configure(cmd) // the global settings
		return err
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		if strings.Contains(err.Error(), "unknown shorthand flag") {
			// oauthd mints no ID that starts with '-', but a key made by an
			// older version (one in 64) or an imported client ID may.
			return fmt.Errorf("%w; an ID that starts with '-' goes after `--` (e.g. `%s -- -AbC…`); see `%s --help`", err, cmd.CommandPath(), cmd.CommandPath())
		}
		return fmt.Errorf("%w; see `%s --help`", err, cmd.CommandPath())
	})
	// --version prints what `oauthd version` prints.
	v := buildVersion()
	root.Version = v.Release
	root.SetVersionTemplate(v.text())
	root.AddCommand(newVersionCommand(v), newServeCommand(o), newUsersCommand(o), newClientsCommand(o), newKeysCommand(o), newBenchCommand(o), newStoreCommand(o), newConfigCommand(o), newAgentsCommand(o))
	addGateway(root)
	requireSubcommands(root)
	markReadOnly(root)
	return root
}

// annGroup marks a command group that runs nothing of its own: its run is
// the one requireSubcommands gives it (its help, or the unknown-subcommand
// error). docs/CLI.md shows no usage or flags for it.
const annGroup = "oauthd.group"

// requireSubcommands makes root and every command group below it
// (`clients`, `clients secrets`, …) refuse an unknown subcommand with a
// non-zero exit and one did-you-mean style at every level (cobra would
// print a group's help and exit 0, and word root's suggestions its own
// way). A group given no subcommand prints its help.
func requireSubcommands(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.HasSubCommands() || c.Runnable() {
			return
		}
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[annGroup] = "true"
		c.Args = cobra.ArbitraryArgs
		c.SuggestionsMinimumDistance = 2 // cobra sets it on root only
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += " (did you mean " + strings.Join(s, " or ") + "?)"
			}
			return fmt.Errorf("%s; see `%s --help` for the commands", msg, cmd.CommandPath())
		}
	}
	walk(root)
}

// logger returns the slog logger for the command's stderr.
func (o *rootOptions) logger(cmd *cobra.Command, def slog.Level) (*slog.Logger, error) {
	return o.Logger(cmd.ErrOrStderr(), def)
}
