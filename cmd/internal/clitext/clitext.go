package clitext

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

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
// TestTextOutputOnePlace (cmd/oauthd) keeps the other files of cmd from
// writing text any other way.

// Escape returns s with every unsafe character escaped. With
// keepLines, newline and tab pass (text whose lines are ours: an error's
// lines, a report).
func Escape(s string, keepLines bool) string {
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
	io.WriteString(f, Escape(fmt.Sprintf(fmt.FormatString(f, verb), e.v), false))
}

// Textf writes format with every argument escaped: format is the
// command's own text, the arguments are values.
func Textf(w io.Writer, format string, args ...any) error {
	esc := make([]any, len(args))
	for i, a := range args {
		esc[i] = escaped{a}
	}
	_, err := fmt.Fprintf(w, format, esc...)
	return err
}

// Lines escapes what passes through it to W, keeping newlines and tabs:
// for text whose lines are the command's own (oauthd-bench's reports and
// progress, errors).
type Lines struct{ W io.Writer }

func (l Lines) Write(p []byte) (int, error) {
	if _, err := io.WriteString(l.W, Escape(string(p), true)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// PrintError writes err on stderr, one "PROG: " line (or several, when
// the message has lines of its own), escaped.
func PrintError(w io.Writer, prog string, err error) {
	io.WriteString(w, prog+": "+Escape(err.Error(), true)+"\n")
}

// JSON writes v as exactly one JSON value.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Fields writes "key: value" lines, aligned, each value escaped.
func Fields(w io.Writer, kv ...string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	for i := 0; i+1 < len(kv); i += 2 {
		Textf(tw, "%s:\t%s\n", kv[i], kv[i+1])
	}
	return tw.Flush()
}
