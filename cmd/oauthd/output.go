package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

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
