package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var update = flag.Bool("update", false, "rewrite docs/CONFIG.md from the command tree")

// configDocPath is docs/CONFIG.md from this package's directory.
var configDocPath = filepath.Join("..", "..", "docs", "CONFIG.md")

// TestConfigDoc keeps docs/CONFIG.md equal to the command tree: every
// flag of every command with its variable, file key and default. After a
// flag changes: go test ./cmd/oauthd -run TestConfigDoc -update
func TestConfigDoc(t *testing.T) {
	clearConfigEnv(t)
	got := configDoc(NewRootCommand())
	if *update {
		if err := os.WriteFile(configDocPath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(configDocPath)
	if err != nil {
		t.Fatalf("%v; run go test ./cmd/oauthd -run TestConfigDoc -update", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			g, w := lineAt(gl, i), lineAt(wl, i)
			if g != w {
				t.Fatalf("docs/CONFIG.md differs from the code at line %d:\n file: %s\n code: %s\nrun go test ./cmd/oauthd -run TestConfigDoc -update", i+1, w, g)
			}
		}
	}
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of file)"
}

// TestConfigDocExample: the example file of docs/CONFIG.md is a valid
// configuration.
func TestConfigDocExample(t *testing.T) {
	if _, err := readConfigFile(writeConfig(t, configExample)); err != nil {
		t.Fatal(err)
	}
}

// configExample is the example file of docs/CONFIG.md.
const configExample = `# /etc/oauthd/oauthd.yaml
db: postgres://oauthd@db.internal:5432/oauthd  # the password: PGPASSWORD or ~/.pgpass
master-key-file: /etc/oauthd/master.key
log-format: json
serve:
  addr: 0.0.0.0:8080
  base-url: https://auth.example.com
  app-url: https://app.example.com
  trusted-proxy: [10.0.0.0/8]
  refresh-reuse-grace: 30s
gateway:
  listen: 0.0.0.0:8081
  upstream: http://127.0.0.1:3000
  issuer: https://auth.example.com
  public-url: https://api.example.com
`

const configDocHead = `# Configuration

<!-- Generated from the command tree by ` + "`go test ./cmd/oauthd -run TestConfigDoc -update`" + `; do not edit by hand. -->

Every setting of oauthd is a command-line flag. The global flags and those of ` + "`serve`" + ` and
` + "`gateway`" + ` can also be set by an environment variable or in a YAML configuration file, so that a
deployment is one file to review, diff and ship.

## Contents

- [Where a value comes from](#where-a-value-comes-from)
- [The configuration file](#the-configuration-file)
- [Seeing the effective configuration](#seeing-the-effective-configuration)
- [Adding a setting](#adding-a-setting)
- [Global flags (every command)](#global-flags-every-command)
- [Commands](#commands)

## Where a value comes from

The first of these that sets it wins:

1. the flag on the command line;
2. its environment variable (a variable set to the empty string counts as unset);
3. the configuration file: ` + "`--config FILE`" + ` or ` + "`OAUTHD_CONFIG`" + `;
4. the default, in the tables below.

A value from any of them goes through the flag's own parser: durations are written ` + "`90s`" + `,
` + "`10m`" + `, ` + "`1h30m`" + `; lists are a YAML list in the file and comma-separated in a variable. A value
that does not parse is refused when the command starts, with the variable's name or the key's
path; it is never replaced by the default. After that, each command checks its settings' rules
(ranges, combinations, URLs) in one place, before it opens, creates or listens on anything.

## The configuration file

The keys are the flags' names: the global ones at the top, those of ` + "`serve`" + ` under ` + "`serve:`" + ` and
those of ` + "`gateway`" + ` under ` + "`gateway:`" + `. One file serves both commands:

` + "```yaml\n" + configExample + "```" + `

Every command reads the global keys of the file (so ` + "`OAUTHD_CONFIG=/etc/oauthd/oauthd.yaml oauthd users list`" + `
uses the file's ` + "`db`" + `); ` + "`serve`" + ` and ` + "`gateway`" + ` also read their section. The whole file is checked
by every command that reads it: an unknown key fails with its path and the nearest known key
(` + "`serve.code-tll: unknown key (did you mean \"serve.code-ttl\"?)`" + `), as does a value that does not parse
(` + "`serve.refresh-idle: \"30\" is not a duration such as 90s, 10m or 1h30m`" + `).

Secrets do not belong in the file: the master key is ` + "`OAUTHD_MASTER_KEY`" + ` or the file that
` + "`master-key-file`" + ` names; a PostgreSQL password is best left to ` + "`PGPASSWORD`" + ` or ` + "`~/.pgpass`" + `.

## Seeing the effective configuration

` + "`oauthd config print [--config FILE] [--json]`" + ` prints every setting of ` + "`serve`" + ` and ` + "`gateway`" + ` as they
would start with the same environment, file and global flags: its key, its value and its source
(` + "`flag`, `env`, `file` or `default`" + `). A password in a URL is replaced by ` + "`xxxxx`" + `, the master key by
` + "`********`" + `. ` + "`--json`" + ` prints ` + "`{\"config_file\", \"settings\": [{\"key\", \"value\", \"source\", \"env\"}]}`" + `.

## Adding a setting

One line in the command's ` + "`AddFlags`" + ` (` + "`cmd/internal/wiring/serve_options.go`" + `, ` + "`cmd/oauthd/gateway.go`" + `, ` + "`root.go`" + `), with its
default taken from a constant of the package that owns it; its variable (` + "`OAUTHD_<NAME>`" + `, or
` + "`OAUTHD_GATEWAY_<NAME>`" + `) and its file key follow from its name. Its rule, if any, goes in the
command's one check function (` + "`ServeOptions.Check`" + `, ` + "`gatewayOptions.config`" + `). Then regenerate this
page: ` + "`go test ./cmd/oauthd -run TestConfigDoc -update`" + `.
`

// configDoc is docs/CONFIG.md for the command tree root.
func configDoc(root *cobra.Command) string {
	var b strings.Builder
	b.WriteString(configDocHead)
	b.WriteString("\n## Global flags (every command)\n\n")
	flagTable(&b, root.PersistentFlags(), func(f *pflag.Flag) (string, string) {
		if f.Name == "config" {
			return envName(f, ""), ""
		}
		return envName(f, "OAUTHD_"), f.Name
	})
	b.WriteString("\n`OAUTHD_MASTER_KEY` holds the master key itself (64 hex digits or base64); `--master-key-file` wins over it.\n")
	b.WriteString("\n## Commands\n")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			commandSection(&b, sub)
			walk(sub)
		}
	}
	walk(root)
	return b.String()
}

// commandSection writes the heading, use line and flags of c.
func commandSection(b *strings.Builder, c *cobra.Command) {
	fmt.Fprintf(b, "\n### %s\n\n%s\n", c.CommandPath(), c.Short)
	if !c.Runnable() || c.HasSubCommands() {
		return
	}
	fmt.Fprintf(b, "\n    %s\n\n", c.UseLine())
	section, prefix := c.Annotations[annSection], c.Annotations[annEnvPrefix]
	flags := pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
	c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" {
			flags.AddFlag(f)
		}
	})
	if !flags.HasFlags() {
		b.WriteString("No flags but the global ones.\n")
		return
	}
	flagTable(b, flags, func(f *pflag.Flag) (string, string) {
		if section == "" {
			return "", ""
		}
		return envName(f, prefix), section + "." + f.Name
	})
}

// flagTable writes a Markdown table of fs; setting gives a flag's
// variable and file key ("" when it has none).
func flagTable(b *strings.Builder, fs *pflag.FlagSet, setting func(*pflag.Flag) (env, key string)) {
	b.WriteString("| Flag | Environment | File key | Default | Description |\n|---|---|---|---|---|\n")
	fs.VisitAll(func(f *pflag.Flag) {
		env, key := setting(f)
		usage := f.Usage
		if env != "" && key != "" {
			usage = strings.TrimSuffix(usage, settingSuffix(env, key))
		}
		if f.Name == "config" {
			usage = strings.TrimSuffix(usage, " (env "+configEnv+"; docs/CONFIG.md)")
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", name, code(env), code(key), code(defaultText(f)), cell(usage))
	})
}

// defaultText is f's default as the table shows it; "" when none.
func defaultText(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "[]":
		return ""
	}
	return f.DefValue
}

// code is s as inline code, or a dash when empty.
func code(s string) string {
	if s == "" {
		return "–"
	}
	return "`" + s + "`"
}

// cell escapes s for a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
