package main

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"oauthd/cmd/internal/wiring"
)

// flagValue is the value of cmd's flag name, or "" when it has none.
func flagValue(cmd *cobra.Command, name string) string {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// unknownEnv lists, each with a sentence, the OAUTHD_ variables set that no
// setting reads: a misspelt variable is otherwise silently ignored. They
// are warned of, not refused: one environment may serve several versions.
func unknownEnv() []string {
	known := map[string]bool{configEnv: true, wiring.MasterKeyEnv: true}
	var names []string
	root := NewRootCommand()
	add := func(f *pflag.Flag, prefix string) {
		if f.Name != "help" {
			known[envName(f, prefix)] = true
			names = append(names, envName(f, prefix))
		}
	}
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) { add(f, "OAUTHD_") })
	for _, c := range root.Commands() {
		if prefix := c.Annotations[annEnvPrefix]; prefix != "" {
			c.LocalFlags().VisitAll(func(f *pflag.Flag) { add(f, prefix) })
		}
	}
	slices.Sort(names)
	var out []string
	for _, name := range envNamesWithPrefix("OAUTHD_") {
		if known[name] {
			continue
		}
		msg := name + " is set but no setting reads it"
		best, bestD := "", 4
		for _, k := range names {
			if d := levenshtein.ComputeDistance(name, k); d < bestD {
				best, bestD = k, d
			}
		}
		if best != "" {
			msg += " (did you mean " + best + "?)"
		}
		out = append(out, msg)
	}
	slices.Sort(out)
	return out
}

// warnUnknownEnv logs unknownEnv's sentences.
func warnUnknownEnv(logger *slog.Logger) {
	for _, msg := range unknownEnv() {
		logger.Warn("unknown environment variable: " + msg)
	}
}

// suggestKey is the known key closest to key: the same name in another
// section, or one a few typing mistakes away; "" when none is close.
func suggestKey(key string, known map[string]*pflag.Flag) string {
	keys := make([]string, 0, len(known))
	for k := range known {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	leaf := key[strings.LastIndex(key, ".")+1:]
	best, bestD := "", 4
	for _, k := range keys {
		kleaf := k[strings.LastIndex(k, ".")+1:]
		d := min(levenshtein.ComputeDistance(key, k), levenshtein.ComputeDistance(leaf, kleaf))
		if kleaf == leaf {
			d = 0 // the same name in another section
		}
		if d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// setValue sets f from a value of the environment (a string) or of the
// file (what YAML made of it), through f's own parser.
func setValue(f *pflag.Flag, v any) error {
	sv, isList := f.Value.(pflag.SliceValue)
	var err error
	switch x := v.(type) {
	case nil:
		return errors.New("has no value; remove the key to get the default")
	case map[string]any:
		return fmt.Errorf("want %s, not a mapping", typeHint(f))
	case []any:
		if !isList {
			return fmt.Errorf("want %s, not a list", typeHint(f))
		}
		items := make([]string, 0, len(x))
		for _, it := range x {
			switch it.(type) {
			case map[string]any, []any, nil:
				return fmt.Errorf("want %s", typeHint(f))
			}
			items = append(items, fmt.Sprint(it))
		}
		err = sv.Replace(items)
	default:
		s := fmt.Sprint(x)
		if isList {
			var items []string
			for it := range strings.SplitSeq(s, ",") {
				if it = strings.TrimSpace(it); it != "" {
					items = append(items, it)
				}
			}
			err = sv.Replace(items)
			break
		}
		err = f.Value.Set(s)
		if err != nil && len(f.Annotations[annSecret]) > 0 {
			return fmt.Errorf("the value is not %s", typeHint(f)) // a secret is never echoed
		}
		if err != nil {
			return fmt.Errorf("%q is not %s", s, typeHint(f))
		}
	}
	if err != nil {
		return fmt.Errorf("want %s: %w", typeHint(f), err)
	}
	return nil
}

// typeHint says what a value of f looks like.
func typeHint(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "duration":
		return "a duration such as 90s, 10m or 1h30m"
	case "int":
		return "a whole number"
	case "bool":
		return "true or false"
	case "stringSlice":
		return "a list (YAML list, or comma-separated)"
	}
	return "a " + f.Value.Type()
}
