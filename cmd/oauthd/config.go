package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"oauthd/cmd/internal/wiring"
)

// Configuration (docs/CONFIG.md). Every setting is a flag, declared once in
// the command's AddFlags with its default (a constant of the package that
// owns the setting). The flag's environment variable and its key in the
// configuration file follow from its name; configure fills every flag the
// command line did not set from the first of: its environment variable,
// the file, its default. A value goes through the flag's own parser
// wherever it comes from, and one that does not parse is refused.

// Annotations on flags and commands.
const (
	// annEnv on a flag names its environment variable where the rule
	// (the command's prefix + the name in upper snake case) does not.
	annEnv = wiring.AnnEnv
	// annSecret on a flag masks its value in `config print`.
	annSecret = "oauthd_secret"
	// annSection on a command makes it configurable: its flags are read
	// from the file under this key ("serve", "gateway").
	annSection = "oauthd_config_section"
	// annEnvPrefix on a configurable command: its flags' variable prefix.
	annEnvPrefix = "oauthd_env_prefix"
)

// configEnv names the configuration file when --config does not.
const configEnv = "OAUTHD_CONFIG"

// Where a setting's value came from.
const (
	fromFlag    = "flag"
	fromEnv     = "env"
	fromFile    = "file"
	fromDefault = "default"
)

// setting is a flag with its file key, environment variable and the
// source of its value.
type setting struct {
	key    string // in the file: "db", "serve.addr"
	env    string
	flag   *pflag.Flag
	source string // fromFlag, fromEnv, fromFile or fromDefault
}

// makeConfigurable declares cmd's flags as settings under section of the
// file and prefix in the environment, and appends each flag's variable
// and key to its help.
func makeConfigurable(cmd *cobra.Command, section, prefix string) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[annSection], cmd.Annotations[annEnvPrefix] = section, prefix
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		f.Usage += settingSuffix(envName(f, prefix), section+"."+f.Name)
	})
}

// addGlobalFlags registers --config and appends each persistent flag's
// variable and file key to its help.
func addGlobalFlags(fs *pflag.FlagSet, path *string) {
	fs.VisitAll(func(f *pflag.Flag) {
		f.Usage += settingSuffix(envName(f, "OAUTHD_"), f.Name)
	})
	fs.StringVar(path, "config", "", "YAML configuration file: the global settings and those of serve and gateway, keyed by flag name (env "+configEnv+"; docs/CONFIG.md)")
	_ = fs.SetAnnotation("config", annEnv, []string{configEnv})
}

// settingSuffix is what a setting's help says of its variable and key.
func settingSuffix(env, key string) string {
	return fmt.Sprintf(" (env %s; file %s)", env, key)
}

// envName is f's environment variable under prefix.
func envName(f *pflag.Flag, prefix string) string {
	if v := f.Annotations[annEnv]; len(v) == 1 {
		return v[0]
	}
	return prefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
}

// settingsOf lists the settings of cmd, whose flags are parsed: the
// persistent flags of its parents (global) and, when cmd is configurable,
// its own flags; --config and --help are none.
func settingsOf(cmd *cobra.Command) []*setting {
	section, prefix := cmd.Annotations[annSection], cmd.Annotations[annEnvPrefix]
	inherited := cmd.InheritedFlags()
	var out []*setting
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		switch {
		case f.Name == "config" || f.Name == "help":
		case inherited.Lookup(f.Name) != nil:
			out = append(out, &setting{key: f.Name, env: envName(f, "OAUTHD_"), flag: f})
		case section != "":
			out = append(out, &setting{key: section + "." + f.Name, env: envName(f, prefix), flag: f})
		}
	})
	return out
}

// configure gives every setting of cmd that the command line did not set
// the value of its environment variable or of the configuration file
// (--config or OAUTHD_CONFIG), which every command reads: the global keys
// apply to all, a section to its command. The whole file is checked, every
// section included: an unknown key or a value that does not parse is an
// error naming it. Nothing else happens before configure returns, so a
// bad setting has no side effect.
func configure(cmd *cobra.Command) ([]*setting, error) {
	var k *koanf.Koanf
	path, _ := wiring.EnvValue(configEnv)
	if f := cmd.Flags().Lookup("config"); f != nil && f.Changed {
		path = f.Value.String()
	}
	if path != "" {
		var err error
		if k, err = readConfigFile(path); err != nil {
			return nil, err
		}
	}
	sets := settingsOf(cmd)
	var errs []error
	for _, s := range sets {
		s.source = fromDefault
		if s.flag.Changed {
			s.source = fromFlag
			continue
		}
		if v, ok := wiring.EnvValue(s.env); ok {
			s.source = fromEnv
			if err := setValue(s.flag, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", s.env, err))
			}
			continue
		}
		if k != nil && k.Exists(s.key) {
			s.source = fromFile
			if err := setValue(s.flag, k.Get(s.key)); err != nil {
				errs = append(errs, fmt.Errorf("config file %s: %s: %w", path, s.key, err))
			}
		}
	}
	return sets, errors.Join(errs...)
}

// readConfigFile reads the YAML file at path and checks every key and
// value in it against the flags of every configurable command.
func readConfigFile(path string) (*koanf.Koanf, error) {
	k := koanf.New(".")
	if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
		return nil, fmt.Errorf("config file %s: %w (pass another --config or fix the file; docs/CONFIG.md)", path, err)
	}
	known, sections := fileKeys()
	var errs []error
	for _, key := range k.Keys() {
		v := k.Get(key)
		if slices.Contains(sections, key) {
			if m, ok := v.(map[string]any); v == nil || (ok && len(m) == 0) {
				continue // an empty section
			}
			errs = append(errs, fmt.Errorf("%s: want a mapping of %s's settings, keyed by flag name", key, key))
			continue
		}
		f, ok := known[key]
		if !ok {
			msg := key + ": unknown key"
			if s := suggestKey(key, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			errs = append(errs, errors.New(msg))
			continue
		}
		if err := setValue(f, v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	if len(errs) > 0 {
		msg := fmt.Sprintf("config file %s:", path)
		for _, e := range errs {
			msg += "\n  " + e.Error()
		}
		return nil, errors.New(msg + "\n" + configKeysHint)
	}
	return k, nil
}

// configKeysHint ends the error of a file with a bad key or value: where
// to see every key. `config print` reads the same file and would refuse it
// too, so the command given reads none.
const configKeysHint = "every key is listed in docs/CONFIG.md and, with its current value, by `oauthd config print --config ''` (which reads no file)"

// fileKeys are the keys a configuration file may hold, each with a flag of
// a new command tree to try its value on, and the section names.
func fileKeys() (map[string]*pflag.Flag, []string) {
	root := NewRootCommand()
	known := map[string]*pflag.Flag{}
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "config" {
			known[f.Name] = f
		}
	})
	var sections []string
	for _, c := range root.Commands() {
		section := c.Annotations[annSection]
		if section == "" {
			continue
		}
		sections = append(sections, section)
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" {
				known[section+"."+f.Name] = f
			}
		})
	}
	return known, sections
}
