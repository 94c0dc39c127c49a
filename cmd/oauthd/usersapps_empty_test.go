package main

import (
	"strings"
	"testing"
)

// TestUsersAppsNone: a user with no apps gets a sentence saying so, not a
// lone header, and --json gives an empty array; an unknown user is still
// an error.
func TestUsersAppsNone(t *testing.T) {
	c := newCLI(t)
	addUser(c)
	out := c.ok("", "users", "apps", "dev@example.com")
	if strings.Contains(out, "CLIENT ID") || !strings.Contains(out, "dev@example.com has allowed no apps") {
		t.Errorf("users apps with no apps = %q; want a sentence that says there are none", out)
	}
	if out := c.ok("", "users", "apps", "dev", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("users apps --json with no apps = %q; want []", out)
	}
	c.fails("no user", "", "users", "apps", "nobody@example.com")
}
