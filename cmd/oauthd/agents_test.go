package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAgentsCommands(t *testing.T) {
	c := newCLI(t)
	out := c.ok("", "agents", "allow", "Claude.AI", "--scope", "PROFILE_READ,BOOKING_READ", "--json")
	var h struct {
		Host      string   `json:"host"`
		Scopes    []string `json:"scopes"`
		AllowedAt string   `json:"allowed_at"`
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil || h.Host != "claude.ai" || len(h.Scopes) != 2 || h.AllowedAt == "" {
		t.Fatalf("allow --json = %s (%v)", out, err)
	}
	c.ok("", "agents", "allow", "mcp.example.com:8443", "--scope", "PROFILE_READ")
	var list []map[string]any
	if err := json.Unmarshal([]byte(c.ok("", "agents", "list", "--json")), &list); err != nil || len(list) != 2 ||
		list[0]["host"] != "claude.ai" || list[1]["host"] != "mcp.example.com:8443" {
		t.Fatalf("list --json = %v (%v)", list, err)
	}
	if out := c.ok("", "agents", "list"); !strings.Contains(out, "claude.ai") || !strings.Contains(out, "PROFILE_READ,BOOKING_READ") {
		t.Errorf("list = %s", out)
	}
	c.fails("not a host name", "", "agents", "allow", "https://claude.ai/x", "--scope", "PROFILE_READ")
	c.fails("NOPE", "", "agents", "allow", "claude.ai", "--scope", "NOPE")
	if out := c.ok("", "agents", "deny", "claude.ai"); !strings.Contains(out, "claude.ai") {
		t.Errorf("deny = %s", out)
	}
	c.fails("not allowed", "", "agents", "deny", "claude.ai")
	if err := json.Unmarshal([]byte(c.ok("", "agents", "list", "--json")), &list); err != nil || len(list) != 1 {
		t.Errorf("list after deny = %v", list)
	}
}
