package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"oauthd/data"
	"oauthd/data/bolt"
	"oauthd/data/postgres"
	"oauthd/issuer/admin"
	"oauthd/keys"
)

// rootOptions are the persistent flags every command shares.
type rootOptions struct {
	db            string
	masterKeyFile string
	logLevel      string
	logFormat     string
}

// AddFlags registers the persistent flags; defaults come from the
// environment (OAUTHD_DB).
func (o *rootOptions) AddFlags(fs *pflag.FlagSet) {
	db := os.Getenv("OAUTHD_DB")
	if db == "" {
		db = "./oauthd.db"
	}
	fs.StringVar(&o.db, "db", db, "the bbolt database file, or a postgres:// URL (env OAUTHD_DB; libpq variables such as PGPASSWORD apply)")
	fs.StringVar(&o.masterKeyFile, "master-key-file", "", "file holding the 32-byte master key that encrypts signing keys (64 hex digits or base64); env OAUTHD_MASTER_KEY holds the key itself")
	fs.StringVar(&o.logLevel, "log-level", "", "debug, info, warn or error (default info for serve, warn otherwise)")
	logFormat := os.Getenv("OAUTHD_LOG_FORMAT")
	if logFormat == "" {
		logFormat = "text"
	}
	fs.StringVar(&o.logFormat, "log-format", logFormat, "text (logfmt) or json (env OAUTHD_LOG_FORMAT)")
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
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		if strings.Contains(err.Error(), "unknown shorthand flag") {
			// oauthd mints no ID that starts with '-', but a key made by an
			// older version (one in 64) or an imported client ID may.
			return fmt.Errorf("%w; an ID that starts with '-' goes after `--` (e.g. `%s -- -AbC…`); see `%s --help`", err, cmd.CommandPath(), cmd.CommandPath())
		}
		return fmt.Errorf("%w; see `%s --help`", err, cmd.CommandPath())
	})
	root.AddCommand(newServeCommand(o), newUsersCommand(o), newClientsCommand(o), newKeysCommand(o), newBenchCommand(o), newStoreCommand(o))
	addGateway(root)
	requireSubcommands(root)
	return root
}

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
	level := def
	if o.logLevel != "" {
		if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
			return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", o.logLevel)
		}
	}
	opts := &slog.HandlerOptions{Level: level}
	switch o.logFormat {
	case "text", "":
		return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", o.logFormat)
}

// masterKey reads the master key from --master-key-file or OAUTHD_MASTER_KEY;
// nil when neither is set.
func (o *rootOptions) masterKey() ([]byte, error) {
	raw, from := os.Getenv("OAUTHD_MASTER_KEY"), "OAUTHD_MASTER_KEY"
	if o.masterKeyFile != "" {
		b, err := os.ReadFile(o.masterKeyFile)
		if err != nil {
			return nil, fmt.Errorf("read --master-key-file: %w", err)
		}
		raw, from = string(b), o.masterKeyFile
	}
	if raw == "" {
		return nil, nil
	}
	k, err := keys.ParseMasterKey(raw)
	if err != nil {
		return nil, fmt.Errorf("the master key in %s is not usable: %w; generate one with `openssl rand -hex 32`", from, err)
	}
	return k, nil
}

func (o *rootOptions) socketPath() string { return o.db + ".sock" }

// connect returns the operator Service for the database: through the running
// server's admin socket when one answers, otherwise by opening the file.
// The returned close function must be called.
func (o *rootOptions) connect(cmd *cobra.Command) (admin.Service, func() error, error) {
	logger, err := o.logger(cmd, slog.LevelWarn)
	if err != nil {
		return nil, nil, err
	}
	var store data.Store
	if postgres.IsURL(o.db) {
		// Any number of servers may run on the database: the CLI works
		// on it directly, and its changes reach them by notification.
		pg, err := postgres.Open(cmd.Context(), o.db, postgres.Options{Logger: logger, MaxConns: 4})
		if err != nil {
			return nil, nil, fmt.Errorf("open database %s: %w", postgres.Redact(o.db), err)
		}
		store = pg
		logger = slog.New(newAuditTee(logger.Handler(), pg))
	} else {
		if c, err := admin.Dial(o.socketPath()); err == nil {
			return c, c.Close, nil
		}
		b, err := bolt.Open(o.db, bolt.Options{Timeout: time.Second, Logger: logger, MustExist: true})
		if errors.Is(err, bolt.ErrNoDatabase) {
			return nil, nil, noDatabase(o.db, err)
		}
		if errors.Is(err, bolt.ErrLocked) {
			return nil, nil, fmt.Errorf("database %s is locked by another process but no admin socket answers at %s; is an older oauthd running?", o.db, o.socketPath())
		}
		if err != nil {
			return nil, nil, err // bolt's errors name the file already
		}
		store = b
	}
	lk := &lazyKeys{open: func(ctx context.Context) (*keys.Manager, error) {
		mk, err := o.masterKey()
		if err != nil {
			return nil, err
		}
		return keys.New(ctx, keys.Config{Store: store, Logger: logger, MasterKey: mk})
	}}
	local := admin.NewLocal(store, lk, logger, time.Now).WithActor(admin.Actor{Via: "cli", UID: os.Getuid(), PID: os.Getpid()})
	return local, store.Close, nil
}

// noDatabase is the error of a command other than serve on a missing or
// empty database: it names the path it tried and how to point elsewhere.
// Only serve creates a database.
func noDatabase(db string, err error) error {
	where := db
	if abs, aerr := filepath.Abs(db); aerr == nil && abs != db {
		where = fmt.Sprintf("%s (%s)", db, abs)
	}
	why := "it was never set up by `oauthd serve`"
	if fi, serr := os.Stat(db); serr != nil {
		why = "the file does not exist"
	} else if fi.Size() == 0 {
		why = "the file is empty"
	}
	return &messageError{err: err, msg: fmt.Sprintf("there is no oauthd database at %s: %s. Pass --db PATH or set OAUTHD_DB to use another one; "+
		"`oauthd serve --db PATH` creates a new database on its first start (no other command creates one)", where, why)}
}

// messageError is an error with its own sentence that still unwraps to
// the cause (for errors.Is).
type messageError struct {
	msg string
	err error
}

func (e *messageError) Error() string { return e.msg }
func (e *messageError) Unwrap() error { return e.err }

// lazyKeys builds the key manager on first use, so that commands that do not
// touch keys work without the master key.
type lazyKeys struct {
	open func(context.Context) (*keys.Manager, error)
	once sync.Once
	m    *keys.Manager
	err  error
}

func (l *lazyKeys) get(ctx context.Context) (*keys.Manager, error) {
	l.once.Do(func() { l.m, l.err = l.open(ctx) })
	return l.m, l.err
}

func (l *lazyKeys) List(ctx context.Context) ([]keys.Info, error) {
	m, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return m.List(ctx)
}

func (l *lazyKeys) Rotate(ctx context.Context, alg string) (keys.RotateResult, error) {
	m, err := l.get(ctx)
	if err != nil {
		return keys.RotateResult{}, err
	}
	return m.Rotate(ctx, alg)
}

func (l *lazyKeys) Revoke(ctx context.Context, kid string) error {
	m, err := l.get(ctx)
	if err != nil {
		return err
	}
	return m.Revoke(ctx, kid)
}

// withService runs fn with the Service and closes it afterwards.
func (o *rootOptions) withService(cmd *cobra.Command, fn func(ctx context.Context, svc admin.Service) error) error {
	svc, closeFn, err := o.connect(cmd)
	if err != nil {
		return err
	}
	err = fn(cmd.Context(), svc)
	if cerr := closeFn(); cerr != nil && err == nil {
		err = fmt.Errorf("close database: %w", cerr)
	}
	return err
}

// Output helpers.

// printJSON writes v as exactly one JSON value.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printList writes items as a JSON array ([] when there are none) or as a
// table with header and one row(item) per item.
func printList[T any](w io.Writer, items []T, asJSON bool, header []string, row func(T) []string) error {
	if asJSON {
		if items == nil {
			items = []T{}
		}
		return printJSON(w, items)
	}
	rows := make([][]string, 0, len(items))
	for _, it := range items {
		rows = append(rows, row(it))
	}
	return table(w, header, rows)
}

// table writes aligned columns.
func table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// fields writes "key: value" lines, aligned.
func fields(w io.Writer, kv ...string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[i], kv[i+1])
	}
	return tw.Flush()
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return fmtTime(*t)
}

// exactArgs is cobra.ExactArgs with a message that names the arguments.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return fmt.Errorf("%s takes %s (got %d arguments); see `%s --help`", cmd.CommandPath(), strings.Join(names, " "), len(args), cmd.CommandPath())
		}
		return nil
	}
}

// minArgs requires at least the named arguments.
func minArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < len(names) {
			return fmt.Errorf("%s takes %s... (got %d arguments); see `%s --help`", cmd.CommandPath(), strings.Join(names, " "), len(args), cmd.CommandPath())
		}
		return nil
	}
}
