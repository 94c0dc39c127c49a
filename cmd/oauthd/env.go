package main

import (
	"os"
	"strings"
	"time"
)

// The one way flags take their defaults from the environment: a variable
// that is unset or empty gives the flag's own default.

// envOr is the environment variable name, or def when it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// envList splits the comma-separated environment variable name.
func envList(name string) []string {
	var out []string
	for _, v := range strings.Split(os.Getenv(name), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// envDuration is the duration in the environment variable name, or def
// when it is unset or does not parse (the flag's own parsing then reports
// nothing; run checks the value).
func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}
