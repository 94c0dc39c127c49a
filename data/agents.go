package data

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AgentHost is the operator's review of the AI assistants of one host:
// the clients identified by a client ID metadata document (an https URL
// as client_id) on that host may ask for Scopes and no more; a host
// without an AgentHost is not available on the platform
// (docs/AGENTS.md).
type AgentHost struct {
	// Host is the canonical host of the documents ([CanonicalAgentHost]):
	// a lower-case host name or IP literal, with ":port" when not 443.
	Host      string    `json:"host"`
	Scopes    []string  `json:"scopes"`
	AllowedAt time.Time `json:"allowed_at"`
}

// AgentHostStore keeps the operator's host reviews; every [Store] is
// one (the backends read and write it directly, so every replica sees a
// change at once).
type AgentHostStore interface {
	// PutAgentHost stores h (replacing the review of the same host).
	PutAgentHost(ctx context.Context, h AgentHost) error
	// GetAgentHost returns the review of host (canonical); ErrNotFound
	// when the host is not allowed.
	GetAgentHost(ctx context.Context, host string) (AgentHost, error)
	// ListAgentHosts returns every review, ordered by host.
	ListAgentHosts(ctx context.Context) ([]AgentHost, error)
	// DeleteAgentHost removes the review of host; ErrNotFound when there
	// is none.
	DeleteAgentHost(ctx context.Context, host string) error
}

// NormalizeAgentHost returns h as stores keep it: a copy, in UTC.
func NormalizeAgentHost(h AgentHost) AgentHost {
	h.Scopes = slices.Clone(h.Scopes)
	h.AllowedAt = h.AllowedAt.UTC()
	return h
}

// ValidateAgentHost checks the rules of a stored review.
func ValidateAgentHost(h AgentHost) error {
	c, err := CanonicalAgentHost(h.Host)
	if err != nil {
		return err
	}
	if c != h.Host {
		return ruleErr("host", "%q is not in its canonical form %q", h.Host, c)
	}
	return validateScopes(h.Scopes)
}

// CanonicalAgentHost is the one canonical form of a host of client ID
// metadata documents, as the operator names it (`agents allow HOST`) and
// as a client ID's URL has it ([MetadataClientHost]): lower case, a port
// only when it is not 443, an IPv6 literal in brackets. Every comparison
// of hosts goes through it.
func CanonicalAgentHost(h string) (string, error) {
	if h == "" || len(h) > 260 || strings.ContainsAny(h, "/?#@ \t\r\n\\") {
		return "", ruleErr("host", "%q is not a host name (give it without scheme or path, e.g. claude.ai or mcp.example.com:8443)", h)
	}
	name, port := h, ""
	if hh, p, err := net.SplitHostPort(h); err == nil {
		name, port = hh, p
	} else if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		name = h[1 : len(h)-1]
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if name == "" {
		return "", ruleErr("host", "%q has no host name", h)
	}
	if ip := net.ParseIP(name); ip != nil {
		if strings.Contains(name, ":") {
			name = "[" + ip.String() + "]"
		} else {
			name = ip.String()
		}
	} else {
		for _, label := range strings.Split(name, ".") {
			if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
				return "", ruleErr("host", "%q is not a valid host name", h)
			}
			for _, r := range label {
				if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
					return "", ruleErr("host", "%q is not a valid host name (use its ASCII form, xn--… for international names)", h)
				}
			}
		}
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return "", ruleErr("host", "%q has an invalid port", h)
		}
		if n != 443 {
			name += ":" + port
		}
	}
	return name, nil
}

// MaxMetadataClientIDLen bounds a client ID that is a metadata document's
// URL (as every client ID, [MaxClientIDLen]).
const MaxMetadataClientIDLen = MaxClientIDLen

// IsMetadataClientID reports whether id has the form of a client ID
// metadata document's URL (draft-ietf-oauth-client-id-metadata-document
// §3): https, a host, a path other than "/", no query, fragment, user
// info, or "." / ".." segment. It says nothing of the document.
func IsMetadataClientID(id string) bool {
	_, err := MetadataClientHost(id)
	return err == nil
}

// MetadataClientHost returns the canonical host ([CanonicalAgentHost]) of
// a metadata document's URL, or an error saying why id is not one.
func MetadataClientHost(id string) (string, error) {
	if !strings.HasPrefix(id, "https://") {
		return "", ruleErr("client_id", "a client ID metadata document's URL uses https")
	}
	if len(id) > MaxMetadataClientIDLen {
		return "", ruleErr("client_id", "a client ID metadata document's URL is at most %d bytes here", MaxMetadataClientIDLen)
	}
	if err := ValidateClientID(id); err != nil {
		return "", err
	}
	u, err := url.Parse(id)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || strings.ContainsAny(id, "#?") ||
		u.Path == "" || u.Path == "/" || u.RawPath != "" && u.RawPath != u.Path {
		return "", ruleErr("client_id", "a client ID metadata document's URL has a host and a path, and no query, fragment or user info")
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return "", ruleErr("client_id", "a client ID metadata document's URL has no . or .. segment")
		}
	}
	return CanonicalAgentHost(u.Host)
}

// AgentHostNotFound is the error a store returns for a host it has no
// review of.
func AgentHostNotFound(op, host string) error { return fmt.Errorf("%s %q: %w", op, host, ErrNotFound) }
