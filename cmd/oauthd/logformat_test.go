package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCLILogFormat(t *testing.T) {
	c := newCLI(t)
	_, stderr, err := c.run("", "users", "list", "--log-format", "json", "--log-level", "debug")
	if err != nil {
		t.Fatalf("users list --log-format json: %v\nstderr: %s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatal("--log-level debug logged nothing; want at least the database open record")
	}
	for _, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec["msg"] == nil || rec["level"] == nil {
			t.Errorf("log line %q is not a JSON record with msg and level (%v)", l, err)
		}
	}
	c.fails(`--log-format "yaml": use text or json`, "", "users", "list", "--log-format", "yaml")
}

// TestCLIDashID: a key ID may start with '-' (base64url); the error says to
// put it after `--`, and `--` works.
func TestCLIDashID(t *testing.T) {
	c := newCLI(t)
	c.fails("goes after `--`", "", "keys", "revoke", "-AbCdEf")
	c.fails("no signing key with kid", "", "keys", "revoke", "--", "-AbCdEf")
}
