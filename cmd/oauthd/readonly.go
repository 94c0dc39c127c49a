package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// readOnlyCommands are the commands that only read: they open the
// database read-only (a bbolt file with bbolt's read-only mode and no
// write-ahead log replay; see bolt.Options.ReadOnly) and create nothing,
// not even the first signing keys (`keys list` on a database without keys
// says so). TestReadOnlyCommandsWriteNothing runs each one and compares
// the database before and after; TestReadOnlyCommandsDeclared fails on a
// list or show command missing here.
var readOnlyCommands = []string{"users list", "clients list", "clients show", "clients secrets list", "keys list", "agents list"}

// readOnlyAnnotation marks a read-only command (see markReadOnly).
const readOnlyAnnotation = "oauthd/read-only"

// markReadOnly annotates the commands of readOnlyCommands under root.
func markReadOnly(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, p := range readOnlyCommands {
			if strings.TrimPrefix(c.CommandPath(), root.Name()+" ") == p {
				if c.Annotations == nil {
					c.Annotations = map[string]string{}
				}
				c.Annotations[readOnlyAnnotation] = "true"
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// isReadOnly reports whether cmd only reads.
func isReadOnly(cmd *cobra.Command) bool { return cmd.Annotations[readOnlyAnnotation] == "true" }
