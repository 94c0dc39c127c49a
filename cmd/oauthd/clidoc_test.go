package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// cliDocPath is docs/CLI.md from this package's directory.
var cliDocPath = filepath.Join("..", "..", "docs", "CLI.md")

// TestCLIDoc keeps docs/CLI.md equal to the command tree: every command
// with its description, usage, help text, examples and flags (each with
// its environment variable and file key), and the notes below. After a
// command or flag changes: go test ./cmd/oauthd -run TestCLIDoc -update
func TestCLIDoc(t *testing.T) {
	clearConfigEnv(t)
	got := cliDoc(NewRootCommand())
	if *update {
		if err := os.WriteFile(cliDocPath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(cliDocPath)
	if err != nil {
		t.Fatalf("%v; run go test ./cmd/oauthd -run TestCLIDoc -update", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			if g, w := lineAt(gl, i), lineAt(wl, i); g != w {
				t.Fatalf("docs/CLI.md differs from the command tree at line %d:\n file: %s\n code: %s\nrun go test ./cmd/oauthd -run TestCLIDoc -update", i+1, w, g)
			}
		}
	}
}

// TestCLIDocCoversTheTree: every command and every flag of the tree is in
// docs/CLI.md (the file as generated now), each flag of serve, gateway and
// the global ones with its environment variable; every note belongs to a
// command that exists.
func TestCLIDocCoversTheTree(t *testing.T) {
	clearConfigEnv(t)
	root := NewRootCommand()
	doc := cliDoc(root)
	for _, c := range docCommands(root) {
		if !strings.Contains(doc, "\n"+strings.Repeat("#", headingLevel(c))+" "+c.CommandPath()+"\n") {
			t.Errorf("docs/CLI.md has no section for %s", c.CommandPath())
		}
		section := cliSection(doc, c.CommandPath())
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && !strings.Contains(section, "`--"+f.Name+"`") {
				t.Errorf("docs/CLI.md's %s has no --%s", c.CommandPath(), f.Name)
			}
			if p := c.Annotations[annEnvPrefix]; p != "" && !strings.Contains(section, "`"+envName(f, p)+"`") {
				t.Errorf("docs/CLI.md's %s does not name --%s's variable %s", c.CommandPath(), f.Name, envName(f, p))
			}
		})
	}
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if !strings.Contains(doc, "| `--"+f.Name+"` | `"+envName(f, "OAUTHD_")+"` |") {
			t.Errorf("docs/CLI.md's global flags lack --%s with %s", f.Name, envName(f, "OAUTHD_"))
		}
	})
	for _, p := range []string{"oauthd config print", "`--config`"} {
		if !strings.Contains(doc, p) {
			t.Errorf("docs/CLI.md does not mention %s", p)
		}
	}
	paths := map[string]bool{}
	for _, c := range docCommands(root) {
		paths[c.CommandPath()] = true
	}
	for p := range cliNotes {
		if !paths[p] {
			t.Errorf("cliNotes has a note for %q, which is no command", p)
		}
	}
}

// cliSection is the part of doc under the heading of path, up to the next
// heading of a command.
func cliSection(doc, path string) string {
	_, rest, ok := strings.Cut(doc, " "+path+"\n")
	if !ok {
		return ""
	}
	if i := regexp.MustCompile(`\n#{2,3} oauthd`).FindStringIndex(rest); i != nil {
		return rest[:i[0]]
	}
	return rest
}

// docCommands are the commands the reference lists, depth first in the
// tree's order: every one but help, completion and hidden ones.
func docCommands(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			out = append(out, sub)
			walk(sub)
		}
	}
	walk(root)
	return out
}

// headingLevel is 2 for a command of root, 3 below.
func headingLevel(c *cobra.Command) int {
	if c.Parent() != nil && c.Parent().Parent() == nil {
		return 2
	}
	return 3
}

// anchor is GitHub's anchor of the heading of c.
func anchor(c *cobra.Command) string { return strings.ReplaceAll(c.CommandPath(), " ", "-") }

const cliDocHead = `# The command line

<!-- Generated from the command tree by ` + "`go test ./cmd/oauthd -run TestCLIDoc -update`" + ` (cmd/oauthd/clidoc_test.go); do not edit by hand. -->

One binary, ` + "`oauthd`" + `: the authorization server, the operator's commands and the resource-server
gateway. This page is made from the same command tree as ` + "`oauthd --help`" + ` and ` + "`oauthd COMMAND --help`" + `,
and says the same, with notes of its own after a command's help. The load generator is not in it: it
is a command of its own, ` + "`go run ./cmd/oauthd-bench --help`" + ` ([PERFORMANCE.md](PERFORMANCE.md)).

## How every command behaves

- **Settings.** Every setting is a flag. The global flags and those of ` + "`serve`" + ` and ` + "`gateway`" + ` can
  also be set by their environment variable or in the configuration file (` + "`--config FILE`" + ` or
  ` + "`OAUTHD_CONFIG`" + `); the tables below name both. A flag wins over its variable, the variable over
  the file, the file over the default; the file's format and the rules: [CONFIG.md](CONFIG.md).
  ` + "`oauthd config print`" + ` shows what ` + "`serve`" + ` and ` + "`gateway`" + ` would start with, and where each value
  came from.
- **Output.** Every command that prints a record takes ` + "`--json`" + ` and then prints exactly one JSON
  value on stdout. Errors go to stderr with a sentence that says what to do, and the exit code is 1.
- **The database.** ` + "`--db`" + ` is a bbolt file (with its write-ahead log ` + "`PATH-wal`" + ` beside it) or a
  ` + "`postgres://`" + ` URL ([REPLICAS.md](REPLICAS.md)); how to back either up:
  [PRODUCTION.md](PRODUCTION.md#backups-and-restores). Only ` + "`serve`" + ` creates a database (on its
  first start, with its first signing keys). Every other command on a missing, empty or never
  set-up database fails, creating nothing, with a sentence that names the path it tried.
- **Names.** An unknown command or subcommand exits 1 with the close matches (` + "`oauthd clients lst`" + ` →
  ` + "`unknown command \"lst\" for \"oauthd clients\" (did you mean list or set?)`" + `). Users are named by
  ID, email or username. Client IDs and key IDs that oauthd mints never begin with ` + "`-`" + `; one that
  does (an imported client, a key of an older version) goes after ` + "`--`" + `.
`

// cliNotes are what docs/CLI.md says of a command after its help: what an
// operator needs beyond the flags. Keyed by command path; markdown.
var cliNotes = map[string]string{
	"oauthd serve": `On an empty database ` + "`serve`" + ` creates the file and the first signing keys (an ` + "`active`" + ` and a
` + "`next`" + ` key). SIGINT/SIGTERM stop accepting connections, finish requests in flight (up to 10 s),
remove the admin socket, close the database and exit 0. Access tokens live 1800 s (the scheduling
API's rule; not configurable). Production settings: [PRODUCTION.md](PRODUCTION.md); the login
handed to the platform: [LOGIN-HANDOVER.md](LOGIN-HANDOVER.md); behind PgBouncer:
[POSTGRESQL.md](POSTGRESQL.md#behind-pgbouncer).`,

	"oauthd users add": `The password is read from stdin (one trailing newline is dropped), at least 8 characters, and
stored as an argon2id hash. ` + "`--json`" + ` prints ` + "`{\"id\", \"email\", \"username\", \"name\", \"time_zone\"}`" + `.
A username that reads as a user ID (` + "`12`, `+1`, `-0`, `007`" + `) is refused: every ` + "`USER`" + ` argument reads
it as an ID.`,

	"oauthd users list": "`--json` gives each user's `state` (`active` or `disabled`) and, `null` when they have none,\n" +
		"`disabled_at`, `external_id` (the platform's user ID, for users the platform logs in) and `invalid`:\n" +
		"which of the user's stored fields the rules of a new user refuse today, and why (an earlier\n" +
		"release's username `+1`, an email with an invisible character, the time zone `Local`:\n" +
		"[IDENTITY.md](IDENTITY.md)); the text's `STATE` says `refused today: …`. Nothing is changed.",

	"oauthd users import": `Each hash is checked on import, including its cost: at most 64 MiB of memory per check (argon2id
` + "`m`" + `, scrypt 128·r·2^ln), bcrypt cost 14, 2,000,000 PBKDF2 iterations — a hash's parameters decide
what every login against it costs. Every row is checked before anything is written (fields, hash,
email and username against the other rows and the stored users); the users are then created in
one transaction: nothing half-imported is ever left, not even by a crash. See [USERS.md](USERS.md).`,

	"oauthd users disable": `Ends a user at once: their browser sessions, consent grants, unused authorization codes and
refresh-token families are deleted in the same transaction that marks them disabled, so their
access tokens are refused at ` + "`/v2/me`" + ` and introspection immediately (resource servers that verify
offline see them until they expire, within 30 minutes), refresh tokens fail with ` + "`invalid_grant`" + `,
and nothing new (session, code, grant) can be stored for them. A disabled user cannot log in or
consent.`,

	"oauthd users enable": "Restores login, not the grants: clients must be authorized again.",

	"oauthd users apps": "A user with no apps gets a sentence saying so; `--json` then prints `[]`. See\n[CONNECTED-APPS.md](CONNECTED-APPS.md).",

	"oauthd clients create": "`--owner` must be an existing user. `--scope` is repeatable and takes comma- or space-separated\n" +
		"lists; unknown scopes are refused by name. Up to 10 `--redirect-uri`s: absolute, `https` (or `http`\n" +
		"on a loopback host), no fragment. `--public` makes a public client (no secret; PKCE required). The\n" +
		"client secret is printed once: store it then.",

	"oauthd clients list": "`--status pending` lists the clients under review **and** the approved clients with a pending\nchange (everything to decide).",

	"oauthd clients show": `Prints the record with ` + "`legacy`" + `, the secrets' IDs with ` + "`created_at`/`last_used_at`" + ` (never the
secrets), for a legacy client ` + "`authorization_requests: {with_scope, without_scope, days: 30}`" + ` and
` + "`migration_safe`" + `, and, when the owner asked for one, ` + "`pending_change`" + ` next to the approved settings (the
only ones in force), and ` + "`rejected_change`" + ` (the last rejected one, with ` + "`reject_reason`" + `).
` + "`allowed_origins`" + `: the browser origins CORS admits for the client (see
[HTTP.md](HTTP.md#browser-clients-cors)). ` + "`revision`" + ` is a digest of type, scopes, redirect URIs and the
pending change, for ` + "`approve`" + ` and ` + "`reject`" + ` ` + "`--revision`" + `; ` + "`show`" + ` prints both commands with it.`,

	"oauthd clients approve": `A new client is unusable until approved. On an approved client with a pending change, ` + "`approve`" + `
applies the change. With ` + "`--revision R`" + ` (from ` + "`clients show`" + `) it approves only if nothing changed since you
looked, so an owner cannot swap a wider change in between.`,

	"oauthd clients reject": `On an approved client with a pending change, ` + "`reject`" + ` discards the change (the client stays
approved as it was; the reason is shown to the owner); reject again to reject the client itself.
With ` + "`--revision R`" + ` it rejects only what you looked at: a retried rejection of a change, or one the
owner withdrew meanwhile, fails instead of rejecting the whole client (which revokes its grants).`,

	"oauthd clients secrets generate": "`--json` prints `{\"secret_id\", \"client_secret\"}`. Rotation: generate, switch your app to the new\n" +
		"secret, check with `secrets list` that the old one's `last_used_at` stopped moving, revoke it.",

	"oauthd clients secrets revoke": "Takes effect at once; a confidential client keeps at least one secret.",

	"oauthd clients scopes set": `Sets the scopes at once (the operator is the reviewer; so do ` + "`redirect-uris set`" + ` and
` + "`post-logout-uris set`" + `). On a legacy client this is the migration to a scoped client, refused while
` + "`clients show`" + ` says ` + "`migration_safe: false`" + ` (saying how many recent requests came without ` + "`scope`" + `): add
` + "`scope`" + ` to the authorization URL, wait until it says ` + "`migration_safe: true`" + `, or pass ` + "`--force`" + `. The
scopes: [SCOPES.md](SCOPES.md).`,

	"oauthd clients set": `The client's protections (see [HTTP.md](HTTP.md#dpop-and-pushed-authorization-requests)), applied at
once. ` + "`clients show`" + ` prints them when one is on; its ` + "`--json`" + ` always has ` + "`dpop_bound_access_tokens`" + ` and
` + "`require_pushed_authorization_requests`" + `.`,

	"oauthd keys rotate": `The published ` + "`next`" + ` key becomes ` + "`active`" + `, the active key becomes ` + "`retired`" + ` (still published
until every token it signed has expired: 1800 s plus 60 s leeway), and a new ` + "`next`" + ` key is made.
Resource servers that cache the JWKS have already seen the key that now signs.`,

	"oauthd keys revoke": `Emergency: the key leaves the JWKS at once and tokens it signed stop verifying at the issuer at
once, at resource servers within one JWKS max-age (60 s). A key ID that starts with ` + "`-`" + ` (made by an
older version) goes after ` + "`--`" + `: ` + "`oauthd keys revoke -- -AbC…`" + `.`,

	"oauthd store partition-families": "A bbolt `--db` is refused. See [POSTGRESQL.md](POSTGRESQL.md#partitioned-families) and\n" +
		"[SCALE.md](SCALE.md#hash-partitioned-families).",

	"oauthd store copy": "It counts the authorization codes, refresh families and sessions that are live apart from those\n" +
		"whose time is over but that no sweep has removed yet (copied too; the target's sweep removes them):\n" +
		"`--json` prints `{\"from\", \"to\", \"users\", \"clients\", \"auth_codes\", \"families\", \"grants\", \"sessions\",\n" +
		"\"keys\", \"expired\": {\"auth_codes\", \"families\", \"sessions\"}}`, where `auth_codes`, `families` and `sessions` are\n" +
		"the live ones. A bbolt `--to` is left as one file, without a write-ahead log beside it. Moving to PostgreSQL:\n" +
		"[REPLICAS.md](REPLICAS.md); backups: [PRODUCTION.md](PRODUCTION.md#backups-and-restores).",

	"oauthd store compact": "`serve` says at start when compacting is worth it.",

	"oauthd gateway": "How to put it in front of an API: [PROTECTING-AN-API.md](PROTECTING-AN-API.md).",

	"oauthd agents": "AI assistants' hosts (client ID metadata documents): see [AGENTS.md](AGENTS.md).",

	"oauthd agents deny": "Removes the permission and revokes every grant of every client on that host; `--json` prints\n" +
		"`{\"host\", \"clients\": [...], \"grants_revoked\"}`.",

	"oauthd version": "Needs no database and reads no settings; `oauthd --version` prints the same text. `--json` prints\n" +
		"`{\"release\", \"commit\", \"commit_time\", \"modified\", \"go\", \"schemas\": [{\"backend\", \"reads\", \"upgrades\"}]}`.",

	"oauthd config print": "The file's format and every key: [CONFIG.md](CONFIG.md).",
}

// cliDoc is docs/CLI.md for the command tree root.
func cliDoc(root *cobra.Command) string {
	var b strings.Builder
	// The table of contents first, before the head's own sections.
	intro, rest, _ := strings.Cut(cliDocHead, "\n## ")
	b.WriteString(intro + "\n")
	cmds := docCommands(root)
	b.WriteString("\n## Contents\n\n- [How every command behaves](#how-every-command-behaves)\n- [Global flags](#global-flags)\n")
	for _, c := range cmds {
		indent := strings.Repeat("  ", headingLevel(c)-2)
		fmt.Fprintf(&b, "%s- [`%s`](#%s)\n", indent, c.CommandPath(), anchor(c))
	}
	b.WriteString("\n## " + rest)
	b.WriteString("\n## Global flags\n\nEvery command takes them.\n\n")
	flagTable(&b, root.PersistentFlags(), func(f *pflag.Flag) (string, string) {
		if f.Name == "config" {
			return envName(f, ""), ""
		}
		return envName(f, "OAUTHD_"), f.Name
	})
	b.WriteString("\n`OAUTHD_MASTER_KEY` holds the master key itself (64 hex digits or base64); `--master-key-file` wins over it.\n")
	for _, c := range cmds {
		cliSectionOf(&b, c)
	}
	return b.String()
}

// cliSectionOf writes the section of c: heading, description, usage, help
// text, examples, subcommands, flags and note.
func cliSectionOf(b *strings.Builder, c *cobra.Command) {
	fmt.Fprintf(b, "\n%s %s\n\n%s\n", strings.Repeat("#", headingLevel(c)), c.CommandPath(), mdText(c.Short))
	if c.Runnable() && !isGroupRun(c) {
		fmt.Fprintf(b, "\n    %s\n", c.UseLine())
	}
	if long := strings.TrimSpace(c.Long); long != "" {
		b.WriteString("\n" + mdText(long) + "\n")
	}
	if ex := strings.TrimRight(c.Example, "\n"); ex != "" {
		var lines []string
		for _, l := range strings.Split(ex, "\n") {
			lines = append(lines, strings.TrimPrefix(l, "  "))
		}
		b.WriteString("\n```sh\n" + strings.Join(lines, "\n") + "\n```\n")
	}
	if c.HasSubCommands() {
		b.WriteString("\n")
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			fmt.Fprintf(b, "- [`%s`](#%s): %s\n", sub.CommandPath(), anchor(sub), mdText(sub.Short))
		}
	}
	if c.Runnable() && !isGroupRun(c) {
		section, prefix := c.Annotations[annSection], c.Annotations[annEnvPrefix]
		flags := pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" {
				flags.AddFlag(f)
			}
		})
		if flags.HasFlags() {
			b.WriteString("\n")
			flagTable(b, flags, func(f *pflag.Flag) (string, string) {
				if section == "" {
					return "", ""
				}
				return envName(f, prefix), section + "." + f.Name
			})
		} else {
			b.WriteString("\nNo flags but the global ones.\n")
		}
	}
	if note := cliNotes[c.CommandPath()]; note != "" {
		b.WriteString("\n" + note + "\n")
	}
}

// isGroupRun reports whether c is a command group whose only run is the
// help or the unknown-subcommand error (requireSubcommands).
func isGroupRun(c *cobra.Command) bool { return c.Annotations[annGroup] != "" }

var (
	docRef     = regexp.MustCompile(`\bdocs/([A-Z][A-Z0-9-]*\.md)`)
	mdSpecial  = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `_`, `\_`, `<`, `&lt;`, `[`, `\[`, `]`, `\]`, `|`, `\|`)
	codeSpanRE = regexp.MustCompile("`[^`]*`")
	flagLine   = regexp.MustCompile(`^--[a-z0-9-]+(=\S+| [A-Z]+)?: `)
)

// mdText is help text as Markdown: a paragraph whose lines are indented
// (an option list, a sample) becomes a code block, the others text with
// Markdown's special characters escaped outside code spans, and every
// docs/NAME.md a link.
func mdText(s string) string {
	var out []string
	for _, para := range strings.Split(s, "\n\n") {
		lines := strings.Split(para, "\n")
		indented := false
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, " ") {
				indented = true
			}
		}
		if strings.HasPrefix(lines[0], " ") {
			indented = true
		}
		if indented {
			// The first lines of text before an indented part stay text.
			i := 0
			for i < len(lines) && !strings.HasPrefix(lines[i], " ") {
				i++
			}
			if i > 0 {
				out = append(out, mdLine(strings.Join(lines[:i], "\n")))
			}
			var code []string
			for _, l := range lines[i:] {
				code = append(code, "    "+l)
			}
			out = append(out, strings.Join(code, "\n"))
			continue
		}
		// A line that explains a flag ("--name=VALUE: …") starts a line
		// in Markdown too (a hard break before it).
		var text strings.Builder
		for i, l := range lines {
			if i > 0 {
				if flagLine.MatchString(l) {
					text.WriteString("\\")
				}
				text.WriteString("\n")
			}
			text.WriteString(mdLine(l))
		}
		out = append(out, text.String())
	}
	return strings.Join(out, "\n\n")
}

// mdLine escapes text outside its code spans and links docs/NAME.md.
func mdLine(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range codeSpanRE.FindAllStringIndex(s, -1) {
		b.WriteString(mdPlain(s[last:m[0]]))
		b.WriteString(s[m[0]:m[1]])
		last = m[1]
	}
	b.WriteString(mdPlain(s[last:]))
	return b.String()
}

func mdPlain(s string) string {
	s = mdSpecial.Replace(s)
	// The escaping above touched no "docs/NAME.md" (no special characters
	// but '-' and '.' in it).
	return docRef.ReplaceAllString(s, "[$1]($1)")
}
