package main

import (
	"os"
	"strings"
)

// envNamesWithPrefix lists the variables set to something whose names
// start with prefix.
func envNamesWithPrefix(prefix string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if name, v, _ := strings.Cut(kv, "="); strings.HasPrefix(name, prefix) && v != "" {
			out = append(out, name)
		}
	}
	return out
}
