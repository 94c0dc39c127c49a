package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/clitext"
)

// Every text the command prints goes through cmd/internal/clitext
// (Textf, Fields, JSON, Lines, PrintError) or the tables here, which
// escape each cell with clitext.Escape; TestTextOutputOnePlace keeps it so.

// printList writes items as a JSON array ([] when there are none) or as a
// table with header and one row(item) per item.
func printList[T any](w io.Writer, items []T, asJSON bool, header []string, row func(T) []string) error {
	if asJSON {
		if items == nil {
			items = []T{}
		}
		return clitext.JSON(w, items)
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
			esc[i] = clitext.Escape(c, false)
		}
		io.WriteString(tw, strings.Join(esc, "\t")+"\n")
	}
	line(header)
	for _, r := range rows {
		line(r)
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
