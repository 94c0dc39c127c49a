package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"oauthd/data"
)

// AgentHostView is the operator's review of an AI assistants' host
// (`oauthd agents list`).
type AgentHostView struct {
	Host      string    `json:"host"`
	Scopes    []string  `json:"scopes"`
	AllowedAt time.Time `json:"allowed_at"`
}

// DeniedAgentHost is what [Service.DenyAgentHost] did.
type DeniedAgentHost struct {
	Host string `json:"host"`
	// Clients are the assistants' clients of the host that were refused
	// (their refresh tokens revoked), by ID.
	Clients []string `json:"clients"`
	// GrantsRevoked counts the refresh-token families revoked.
	GrantsRevoked int `json:"grants_revoked"`
}

// AllowAgentHost implements [Service.AllowAgentHost].
func (l *Local) AllowAgentHost(ctx context.Context, host string, scopes []string) (AgentHostView, error) {
	h, err := data.CanonicalAgentHost(host)
	if err != nil {
		return AgentHostView{}, newError(data.ErrInvalid, err.Error())
	}
	sc, err := parseScopes(scopes)
	if err != nil {
		return AgentHostView{}, err
	}
	rec := data.AgentHost{Host: h, Scopes: sc, AllowedAt: l.now().UTC()}
	if err := l.store.PutAgentHost(ctx, rec); err != nil {
		return AgentHostView{}, err
	}
	// The host's stored clients get the new ceiling at once: a narrower
	// one narrows their grants at the next refresh (issuer keptScopes).
	clients, err := l.hostClients(ctx, h)
	if err != nil {
		return AgentHostView{}, err
	}
	for _, id := range clients {
		if _, err := l.store.UpdateClient(ctx, id, func(c data.Client) (data.Client, error) {
			c.Scopes = sc
			c.UpdatedAt = l.now().UTC()
			return c, nil
		}); err != nil && !errors.Is(err, data.ErrNotFound) {
			return AgentHostView{}, err
		}
	}
	l.audit(ctx, "agent_host_allowed", "host", h, "scopes", sc)
	return AgentHostView(data.NormalizeAgentHost(rec)), nil
}

// ListAgentHosts implements [Service.ListAgentHosts].
func (l *Local) ListAgentHosts(ctx context.Context) ([]AgentHostView, error) {
	hs, err := l.store.ListAgentHosts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]AgentHostView, len(hs))
	for i, h := range hs {
		out[i] = AgentHostView(h)
	}
	return out, nil
}

// DenyAgentHost implements [Service.DenyAgentHost]: the review goes, and
// every client of the host is refused (status rejected) with every
// refresh-token family revoked, so refresh fails at once and access
// tokens stop at the server's own checks (the client is no longer
// approved) and, through the revoked-grants feed, at the gateways.
func (l *Local) DenyAgentHost(ctx context.Context, host string) (DeniedAgentHost, error) {
	h, err := data.CanonicalAgentHost(host)
	if err != nil {
		return DeniedAgentHost{}, newError(data.ErrInvalid, err.Error())
	}
	delErr := l.store.DeleteAgentHost(ctx, h)
	if delErr != nil && !errors.Is(delErr, data.ErrNotFound) {
		return DeniedAgentHost{}, delErr
	}
	clients, err := l.hostClients(ctx, h)
	if err != nil {
		return DeniedAgentHost{}, err
	}
	if errors.Is(delErr, data.ErrNotFound) && len(clients) == 0 {
		return DeniedAgentHost{}, newError(data.ErrNotFound, fmt.Sprintf("host %s is not allowed and has no clients; see `oauthd agents list`", h))
	}
	out := DeniedAgentHost{Host: h, Clients: []string{}}
	reason := "the platform no longer allows AI assistants from " + h
	for _, id := range clients {
		_, err := l.store.UpdateClient(ctx, id, func(c data.Client) (data.Client, error) {
			c.Status, c.RejectReason, c.UpdatedAt = data.StatusRejected, reason, l.now().UTC()
			return c, nil
		})
		if errors.Is(err, data.ErrNotFound) {
			continue
		}
		if err != nil {
			return out, err
		}
		n, err := l.revokeGrants(ctx, id)
		out.GrantsRevoked += n
		if err != nil {
			return out, err
		}
		out.Clients = append(out.Clients, id)
	}
	l.audit(ctx, "agent_host_denied", "host", h, "clients", out.Clients, "grants_revoked", out.GrantsRevoked)
	return out, nil
}

// hostClients lists the IDs of the stored clients of a host's metadata
// documents.
func (l *Local) hostClients(ctx context.Context, host string) ([]string, error) {
	all, err := l.store.ListClients(ctx, "")
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, c := range all {
		if c.MetadataHost == host {
			ids = append(ids, c.ID)
		}
	}
	return ids, nil
}
