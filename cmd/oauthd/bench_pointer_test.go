package main

import (
	"strings"
	"testing"
)

// TestBenchPointer: `oauthd bench`, with any flags of the load generator,
// fails and says how to run the load generator's own command.
func TestBenchPointer(t *testing.T) {
	c := newCLI(t)
	for _, args := range [][]string{{"bench"}, {"bench", "-c", "16", "-d", "10s", "--json"}, {"bench", "--emit-tokens", "toks.txt"}} {
		c.fails("run it with `go run ./cmd/oauthd-bench …`", "", args...)
	}
}

// TestProductLinksNoLoadGenerator: the product binary links no package of
// the load generator's command (cmd/oauthd-bench).
func TestProductLinksNoLoadGenerator(t *testing.T) {
	out, err := goList("-deps", "oauthd/cmd/oauthd")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "oauthd/cmd/internal/wiring\n") {
		t.Fatalf("go list -deps oauthd/cmd/oauthd does not list cmd/internal/wiring:\n%s", out)
	}
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "oauthd/cmd/oauthd-bench") || strings.Contains(line, "loadgen") {
			t.Errorf("oauthd links %s: the load generator belongs to cmd/oauthd-bench only", strings.TrimSpace(line))
		}
	}
}
