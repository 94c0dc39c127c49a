package main

import (
	"os"
	"strings"
)

// envValue is the one way oauthd reads its environment: the value of the
// variable name and whether it is set to something. A variable that is
// unset or empty counts as not set, so that `OAUTHD_X=` in a unit file
// gives the flag's own default. What a value means (and a value that does
// not parse, which is refused, never replaced by a default) is decided by
// the flag it sets (config.go) or by the caller.
func envValue(name string) (string, bool) {
	v := os.Getenv(name)
	return v, v != ""
}

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
