package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestE2EShortSaysSoOnce runs `go test -short` on the end-to-end package
// (./e2e) as a developer would, without -v: it passes, runs none of its
// suites (it neither builds nor starts the binary) and says so in exactly
// one line of the go command's output.
func TestE2EShortSaysSoOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compiles the end-to-end package in a subprocess")
	}
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("the line reaches the go command's output through /proc (Linux)")
	}
	const line = "e2e: -short: skipping the end-to-end suites (they build and start the binary)"
	cmd := exec.Command("go", "test", "-short", "-count=1", "oauthd/cmd/oauthd/e2e")
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOFLAGS=") })
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test -short ./e2e: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), line); n != 1 {
		t.Errorf("go test -short ./e2e printed the skip line %d times; want once:\n%s", n, out)
	}
	if lines := strings.Count(strings.TrimSpace(string(out)), "\n") + 1; lines != 2 {
		t.Errorf("go test -short ./e2e printed %d lines; want the skip line and the ok line:\n%s", lines, out)
	}
}
