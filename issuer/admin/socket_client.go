package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	"oauthd/keys"
)

// SocketClient implements [Service] over the admin Unix socket of a running
// server. Create it with [Dial].
type SocketClient struct {
	http *http.Client
}

var _ Service = (*SocketClient)(nil)

// Dial connects to the admin socket at socketPath and checks that something
// answers there. It fails when no server listens.
func Dial(socketPath string) (*SocketClient, error) {
	c, err := SocketHTTP(socketPath, time.Minute)
	if err != nil {
		return nil, err
	}
	return &SocketClient{http: c}, nil
}

// SocketHTTP returns an HTTP client whose every request goes to the admin
// socket at socketPath (any host in the URL), with the given timeout per
// request, after checking that something answers there. Dial uses it;
// so do routes that a server adds beside [Handler]'s.
func SocketHTTP(socketPath string, timeout time.Duration) (*http.Client, error) {
	conn, err := net.DialTimeout("unix", socketPath, time.Second)
	if err != nil {
		return nil, fmt.Errorf("dial admin socket %s: %w", socketPath, err)
	}
	conn.Close()
	var d net.Dialer
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socketPath)
		},
		DisableCompression: true,
	}
	return &http.Client{Transport: tr, Timeout: timeout}, nil
}

// Close releases idle connections.
func (c *SocketClient) Close() error {
	c.http.CloseIdleConnections()
	return nil
}

// call posts req to /v1/op and decodes the result into out. An error reply
// becomes an error whose message is the server's and which wraps the data
// sentinel of its kind.
func (c *SocketClient) call(ctx context.Context, op string, req request, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("admin %s: %w", op, err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://oauthd/v1/"+op, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("admin %s: %w", op, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(hr)
	if err != nil {
		return fmt.Errorf("admin %s through the server's socket: %w", op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var eb errorBody
		if err := json.NewDecoder(resp.Body).Decode(&eb); err != nil || eb.Error == "" {
			return fmt.Errorf("admin %s: the server answered %s", op, resp.Status)
		}
		return &opError{msg: eb.Message, err: sentinelOf(eb.Error)}
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("admin %s: decode the server's answer: %w", op, err)
	}
	return nil
}

// AddUser implements [Service.AddUser].
func (c *SocketClient) AddUser(ctx context.Context, u NewUser) (UserView, error) {
	var out UserView
	return out, c.call(ctx, "users/add", request{User: &u}, &out)
}

// ListUsers implements [Service.ListUsers].
func (c *SocketClient) ListUsers(ctx context.Context) ([]UserView, error) {
	var out []UserView
	return out, c.call(ctx, "users/list", request{}, &out)
}

// ImportUsers implements [Service.ImportUsers].
func (c *SocketClient) ImportUsers(ctx context.Context, us []ImportUser) ([]UserView, error) {
	var out []UserView
	return out, c.call(ctx, "users/import", request{Users: us}, &out)
}

// ListUserApps implements [Service.ListUserApps].
func (c *SocketClient) ListUserApps(ctx context.Context, user string) ([]AppView, error) {
	var out []AppView
	return out, c.call(ctx, "users/apps", request{ID: user}, &out)
}

// RevokeUserApp implements [Service.RevokeUserApp].
func (c *SocketClient) RevokeUserApp(ctx context.Context, user, clientID string) (RemovedApp, error) {
	var out RemovedApp
	return out, c.call(ctx, "users/apps/revoke", request{ID: user, ClientID: clientID}, &out)
}

// DisableUser implements [Service.DisableUser].
func (c *SocketClient) DisableUser(ctx context.Context, ref string) (UserView, error) {
	var out UserView
	return out, c.call(ctx, "users/disable", request{ID: ref}, &out)
}

// EnableUser implements [Service.EnableUser].
func (c *SocketClient) EnableUser(ctx context.Context, ref string) (UserView, error) {
	var out UserView
	return out, c.call(ctx, "users/enable", request{ID: ref}, &out)
}

// CreateClient implements [Service.CreateClient].
func (c *SocketClient) CreateClient(ctx context.Context, nc NewClient) (CreatedClient, error) {
	var out CreatedClient
	return out, c.call(ctx, "clients/create", request{Client: &nc}, &out)
}

// ImportClients implements [Service.ImportClients].
func (c *SocketClient) ImportClients(ctx context.Context, cs []LegacyClient) ([]string, error) {
	var out []string
	if cs == nil {
		cs = []LegacyClient{}
	}
	return out, c.call(ctx, "clients/import", request{Legacy: cs}, &out)
}

// ListClients implements [Service.ListClients].
func (c *SocketClient) ListClients(ctx context.Context, status string) ([]ClientView, error) {
	var out []ClientView
	return out, c.call(ctx, "clients/list", request{Status: status}, &out)
}

// ShowClient implements [Service.ShowClient].
func (c *SocketClient) ShowClient(ctx context.Context, id string) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/show", request{ID: id}, &out)
}

// ApproveClient implements [Service.ApproveClient].
func (c *SocketClient) ApproveClient(ctx context.Context, id string) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/approve", request{ID: id}, &out)
}

// ApproveRevision implements [Service.ApproveRevision].
func (c *SocketClient) ApproveRevision(ctx context.Context, id, revision string) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/approve", request{ID: id, Revision: revision}, &out)
}

// RejectClient implements [Service.RejectClient].
func (c *SocketClient) RejectClient(ctx context.Context, id, reason string) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/reject", request{ID: id, Reason: reason}, &out)
}

// RejectRevision implements [Service.RejectRevision].
func (c *SocketClient) RejectRevision(ctx context.Context, id, reason, revision string) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/reject", request{ID: id, Reason: reason, Revision: revision}, &out)
}

// GenerateSecret implements [Service.GenerateSecret].
func (c *SocketClient) GenerateSecret(ctx context.Context, id string) (CreatedSecret, error) {
	var out CreatedSecret
	return out, c.call(ctx, "clients/secrets/generate", request{ID: id}, &out)
}

// ListSecrets implements [Service.ListSecrets].
func (c *SocketClient) ListSecrets(ctx context.Context, id string) ([]SecretView, error) {
	var out []SecretView
	return out, c.call(ctx, "clients/secrets/list", request{ID: id}, &out)
}

// RevokeSecret implements [Service.RevokeSecret].
func (c *SocketClient) RevokeSecret(ctx context.Context, id, secretID string) error {
	return c.call(ctx, "clients/secrets/revoke", request{ID: id, SecretID: secretID}, nil)
}

// SetScopes implements [Service.SetScopes].
func (c *SocketClient) SetScopes(ctx context.Context, id string, scopes []string) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/scopes/set", request{ID: id, Scopes: scopes}, &out)
}

// ForceScopes implements [Service.ForceScopes].
func (c *SocketClient) ForceScopes(ctx context.Context, id string, scopes []string) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/scopes/set", request{ID: id, Scopes: scopes, Force: true}, &out)
}

// EditClient implements [Service.EditClient].
func (c *SocketClient) EditClient(ctx context.Context, id string, e ClientEdit) (EditResult, error) {
	var out EditResult
	return out, c.call(ctx, "clients/edit", request{ID: id, Edit: &e}, &out)
}

// SetRedirectURIs implements [Service.SetRedirectURIs].
func (c *SocketClient) SetRedirectURIs(ctx context.Context, id string, uris []string) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/redirect-uris/set", request{ID: id, URIs: uris}, &out)
}

// SetPostLogoutRedirectURIs implements [Service.SetPostLogoutRedirectURIs].
func (c *SocketClient) SetPostLogoutRedirectURIs(ctx context.Context, id string, uris []string) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/post-logout-uris/set", request{ID: id, URIs: uris}, &out)
}

// SetClientOptions implements [Service.SetClientOptions].
func (c *SocketClient) SetClientOptions(ctx context.Context, id string, o ClientOptions) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/options/set", request{ID: id, Options: &o}, &out)
}

// ListKeys implements [Service.ListKeys].
func (c *SocketClient) ListKeys(ctx context.Context) ([]keys.Info, error) {
	var out []keys.Info
	return out, c.call(ctx, "keys/list", request{}, &out)
}

// RotateKeys implements [Service.RotateKeys].
func (c *SocketClient) RotateKeys(ctx context.Context, alg string) (keys.RotateResult, error) {
	var out keys.RotateResult
	return out, c.call(ctx, "keys/rotate", request{Alg: alg}, &out)
}

// RevokeKey implements [Service.RevokeKey].
func (c *SocketClient) RevokeKey(ctx context.Context, kid string) error {
	return c.call(ctx, "keys/revoke", request{KID: kid}, nil)
}

// AllowAgentHost implements [Service.AllowAgentHost].
func (c *SocketClient) AllowAgentHost(ctx context.Context, host string, scopes []string) (AgentHostView, error) {
	var out AgentHostView
	return out, c.call(ctx, "agents/allow", request{ID: host, Scopes: scopes}, &out)
}

// ListAgentHosts implements [Service.ListAgentHosts].
func (c *SocketClient) ListAgentHosts(ctx context.Context) ([]AgentHostView, error) {
	var out []AgentHostView
	return out, c.call(ctx, "agents/list", request{}, &out)
}

// DenyAgentHost implements [Service.DenyAgentHost].
func (c *SocketClient) DenyAgentHost(ctx context.Context, host string) (DeniedAgentHost, error) {
	var out DeniedAgentHost
	return out, c.call(ctx, "agents/deny", request{ID: host}, &out)
}
