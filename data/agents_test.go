package data

import "testing"

func TestCanonicalAgentHost(t *testing.T) {
	for in, want := range map[string]string{
		"claude.ai": "claude.ai", "Claude.AI": "claude.ai", "claude.ai.": "claude.ai", "claude.ai:443": "claude.ai",
		"mcp.example.com:8443": "mcp.example.com:8443", "127.0.0.1:9443": "127.0.0.1:9443", "[::1]:8443": "[::1]:8443",
		"[0:0::1]": "[::1]", "xn--bcher-kva.example": "xn--bcher-kva.example",
	} {
		if got, err := CanonicalAgentHost(in); err != nil || got != want {
			t.Errorf("CanonicalAgentHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "https://claude.ai", "claude.ai/x", "user@claude.ai", "claude.ai:0", "claude.ai:99999", "bücher.example",
		"-x.example", "a..b", "claude.ai:08443", "claude ai"} {
		if got, err := CanonicalAgentHost(bad); err == nil {
			t.Errorf("CanonicalAgentHost(%q) = %q; want an error", bad, got)
		}
	}
}

func TestMetadataClientHost(t *testing.T) {
	for in, want := range map[string]string{
		"https://claude.ai/oauth/mcp-client.json":        "claude.ai",
		"https://Claude.AI:443/c":                        "claude.ai",
		"https://127.0.0.1:9443/client.json":             "127.0.0.1:9443",
		"https://agent.example.com:8443/clients/v1/app1": "agent.example.com:8443",
	} {
		if got, err := MetadataClientHost(in); err != nil || got != want {
			t.Errorf("MetadataClientHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"http://claude.ai/c.json", "https://claude.ai", "https://claude.ai/", "https://claude.ai/c?x=1",
		"https://claude.ai/c#f", "https://u:p@claude.ai/c", "https://claude.ai/a/../c", "https://claude.ai/./c", "https://claude.ai/a%2Fb",
		"client-id", "https://claude.ai/c d", "https://claude.ai/" + string(make([]byte, 200))} {
		if IsMetadataClientID(bad) {
			t.Errorf("IsMetadataClientID(%q) = true", bad)
		}
	}
}
