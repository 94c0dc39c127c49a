package main

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"oauthd/cmd/internal/backend"
	"oauthd/cmd/internal/clitext"
	"oauthd/cmd/internal/wiring"
)

// configuredCommands are the commands whose settings a file holds, in the
// order `config print` shows them.
var configuredCommands = []string{"serve", "gateway"}

// printedSetting is one line of `config print`.
type printedSetting struct {
	Key    string `json:"key"`
	Value  any    `json:"value"`
	Source string `json:"source"` // flag, env, file or default
	Env    string `json:"env"`
}

func newConfigCommand(_ *rootOptions) *cobra.Command {
	group := &cobra.Command{Use: "config", Short: "Show the configuration of serve and gateway (docs/CONFIG.md)"}
	var asJSON bool
	printCmd := &cobra.Command{
		Use:   "print [--config FILE] [--json]",
		Short: "Print the effective settings of serve and gateway, secrets masked, and where each value came from",
		Long: `print shows every setting of serve and gateway as they would start with the
same command-line global flags, environment and configuration file: its key
in the file, its value (a password in a URL and the master key masked) and
its source: flag, env, file or default. A bad file or value is refused as
serve and gateway refuse it.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			file, sets, err := effectiveSettings(cmd)
			if err != nil {
				return err
			}
			for _, msg := range unknownEnv() {
				clitext.Textf(cmd.ErrOrStderr(), "warning: %s\n", msg)
			}
			if asJSON {
				return clitext.JSON(cmd.OutOrStdout(), map[string]any{"config_file": file, "settings": sets})
			}
			rows := make([][]string, 0, len(sets))
			for _, s := range sets {
				src := s.Source
				switch s.Source {
				case fromEnv:
					src += " " + s.Env
				case fromFile:
					src += " " + file
				}
				rows = append(rows, []string{s.Key, textValue(s.Value), src})
			}
			clitext.Textf(cmd.OutOrStdout(), "config file: %s\n\n", cmp.Or(file, "none (--config or OAUTHD_CONFIG names one)"))
			return table(cmd.OutOrStdout(), []string{"KEY", "VALUE", "SOURCE"}, rows)
		},
	}
	printCmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON value: {\"config_file\", \"settings\": [{\"key\", \"value\", \"source\", \"env\"}]}")
	group.AddCommand(printCmd)
	return group
}

// effectiveSettings configures a new serve and gateway command as they
// would run with cmd's --config and global flags, and returns the file's
// path and every setting, the master key's included.
func effectiveSettings(cmd *cobra.Command) (string, []printedSetting, error) {
	var args []string
	cmd.Flags().Visit(func(f *pflag.Flag) { // the flags given on the command line
		if f.Name != "json" && f.Name != "help" {
			args = append(args, "--"+f.Name+"="+f.Value.String())
		}
	})
	file, _ := wiring.EnvValue(configEnv)
	if f := cmd.Flags().Lookup("config"); f.Changed {
		file = f.Value.String()
	}
	root := NewRootCommand()
	var out []printedSetting
	for i, name := range configuredCommands {
		c, _, err := root.Find([]string{name})
		if err != nil {
			return "", nil, err
		}
		if err := c.ParseFlags(args); err != nil {
			return "", nil, err
		}
		sets, err := configure(c)
		if err != nil {
			return "", nil, err
		}
		for _, s := range sets {
			if i > 0 && !strings.Contains(s.key, ".") {
				continue // the global settings once
			}
			out = append(out, printedSetting{Key: s.key, Value: shownValue(s.flag), Source: s.source, Env: s.env})
			if s.key == "master-key-file" {
				mk := printedSetting{Key: "master-key", Value: "", Source: fromDefault, Env: wiring.MasterKeyEnv}
				if _, ok := wiring.EnvValue(wiring.MasterKeyEnv); ok {
					mk.Value, mk.Source = masked, fromEnv
				}
				out = append(out, mk)
			}
		}
	}
	// The global settings first, then each command's (stable: by key).
	slices.SortStableFunc(out, func(a, b printedSetting) int {
		return cmp.Compare(strings.Count(a.Key, "."), strings.Count(b.Key, "."))
	})
	return file, out, nil
}

// masked stands for a secret's value.
const masked = "********"

// shownValue is f's value as `config print` shows it: typed for JSON, a
// secret masked, and a password in a URL replaced.
func shownValue(f *pflag.Flag) any {
	if len(f.Annotations[annSecret]) > 0 {
		if f.Value.String() == "" {
			return ""
		}
		return masked
	}
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		list := []string{}
		for _, v := range sv.GetSlice() {
			list = append(list, maskURL(v))
		}
		return list
	}
	switch f.Value.Type() {
	case "bool":
		b, _ := strconv.ParseBool(f.Value.String())
		return b
	case "int":
		n, _ := strconv.Atoi(f.Value.String())
		return n
	}
	return maskURL(f.Value.String())
}

// maskURL replaces the password of a URL (and a PostgreSQL URL's password
// parameters).
func maskURL(v string) string {
	if r := backend.Redact(v); r != v {
		return r
	}
	u, err := url.Parse(v)
	if err != nil {
		return v
	}
	changed := false
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User, changed = url.UserPassword(u.User.Username(), "xxxxx"), true
		}
	}
	// A credential in the query (a signed URL, ?token=, ?api_key=): its
	// value is replaced, the parameters keep their order.
	if u.RawQuery != "" {
		ps := strings.Split(u.RawQuery, "&")
		for i, p := range ps {
			k, _, ok := strings.Cut(p, "=")
			if name, err := url.QueryUnescape(k); ok && err == nil && secretParam(name) {
				ps[i], changed = k+"=xxxxx", true
			}
		}
		u.RawQuery = strings.Join(ps, "&")
	}
	if !changed {
		return v
	}
	return u.String()
}

// secretParam reports whether a URL query parameter named name likely
// holds a credential.
func secretParam(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"token", "key", "secret", "pass", "pwd", "sig", "auth", "credential", "session"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// textValue is a shown value as text.
func textValue(v any) string {
	if l, ok := v.([]string); ok {
		return strings.Join(l, ",")
	}
	return fmt.Sprint(v)
}
