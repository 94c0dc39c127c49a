package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"oauthd/data"
)

// Every text the command line prints goes through this file: what the
// operator reads is what the record is. A stored name (an old record, an
// import, a platform's assertion from before the rule) may hold bytes that
// drive a terminal (ESC[2J clears it, ESC[8m hides what follows) or forge
// a line (CR, LF: a client name that prints a "scopes: PROFILE_READ" line
// of its own), or bidi overrides that reorder it. Text output escapes every
// character [data.UnsafeRune] names, and every byte that is not UTF-8, as
// \xNN or \uNNNN; --json output is unchanged (JSON escapes them itself).
// TestTextOutputOnePlace keeps the other files of the command from writing
// text any other way.

// escapeText returns s with every unsafe character escaped. With
// keepLines, newline and tab pass (text whose lines are ours: an error's
// lines, a report).
func escapeText(s string, keepLines bool) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || (data.UnsafeRune(r) != "" && !(keepLines && (r == '\n' || r == '\t'))) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'), data.UnsafeRune(r) == "":
			b.WriteString(s[i : i+size])
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// escaped formats its value as fmt would, then escapes the result.
type escaped struct{ v any }

func (e escaped) Format(f fmt.State, verb rune) {
	io.WriteString(f, escapeText(fmt.Sprintf(fmt.FormatString(f, verb), e.v), false))
}

// textf writes format with every argument escaped: format is the
// command's own text, the arguments are values.
func textf(w io.Writer, format string, args ...any) error {
	esc := make([]any, len(args))
	for i, a := range args {
		esc[i] = escaped{a}
	}
	_, err := fmt.Fprintf(w, format, esc...)
	return err
}

// linesWriter escapes what passes through it, keeping newlines and tabs:
// for text whose lines are the command's own (bench reports, errors).
//
//lint:ignore U1000 used by the load generator's build (-tags bench)
type linesWriter struct{ w io.Writer }

func (l linesWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(l.w, escapeText(string(p), true)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// printError writes err on stderr, one "oauthd: " line (or several, when
// the message has lines of its own), escaped.
func printError(w io.Writer, err error) {
	io.WriteString(w, "oauthd: "+escapeText(err.Error(), true)+"\n")
}

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

// table writes aligned columns, each cell escaped.
func table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(cells []string) {
		esc := make([]string, len(cells))
		for i, c := range cells {
			esc[i] = escapeText(c, false)
		}
		io.WriteString(tw, strings.Join(esc, "\t")+"\n")
	}
	line(header)
	for _, r := range rows {
		line(r)
	}
	return tw.Flush()
}

// fields writes "key: value" lines, aligned, each value escaped.
func fields(w io.Writer, kv ...string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		textf(tw, "%s:\t%s\n", kv[i], kv[i+1])
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
