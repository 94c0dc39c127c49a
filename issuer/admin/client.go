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

// Client implements [Service] over the admin Unix socket of a running
// server. Create it with [Dial].
type Client struct {
	http *http.Client
}

var _ Service = (*Client)(nil)

// Dial connects to the admin socket at socketPath and checks that something
// answers there. It fails when no server listens.
func Dial(socketPath string) (*Client, error) {
	c, err := SocketHTTP(socketPath, time.Minute)
	if err != nil {
		return nil, err
	}
	return &Client{http: c}, nil
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
func (c *Client) Close() error {
	c.http.CloseIdleConnections()
	return nil
}

// call posts req to /v1/op and decodes the result into out. An error reply
// becomes an error whose message is the server's and which wraps the data
// sentinel of its kind.
func (c *Client) call(ctx context.Context, op string, req request, out any) error {
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
func (c *Client) AddUser(ctx context.Context, u NewUser) (UserView, error) {
	var out UserView
	return out, c.call(ctx, "users/add", request{User: &u}, &out)
}

// ListUsers implements [Service.ListUsers].
func (c *Client) ListUsers(ctx context.Context) ([]UserView, error) {
	var out []UserView
	return out, c.call(ctx, "users/list", request{}, &out)
}

// ImportUsers implements [Service.ImportUsers].
func (c *Client) ImportUsers(ctx context.Context, us []ImportUser) ([]UserView, error) {
	var out []UserView
	return out, c.call(ctx, "users/import", request{Users: us}, &out)
}

// DisableUser implements [Service.DisableUser].
func (c *Client) DisableUser(ctx context.Context, ref string) (UserView, error) {
	var out UserView
	return out, c.call(ctx, "users/disable", request{ID: ref}, &out)
}

// EnableUser implements [Service.EnableUser].
func (c *Client) EnableUser(ctx context.Context, ref string) (UserView, error) {
	var out UserView
	return out, c.call(ctx, "users/enable", request{ID: ref}, &out)
}

// CreateClient implements [Service.CreateClient].
func (c *Client) CreateClient(ctx context.Context, nc NewClient) (CreatedClient, error) {
	var out CreatedClient
	return out, c.call(ctx, "clients/create", request{Client: &nc}, &out)
}

// ImportClients implements [Service.ImportClients].
func (c *Client) ImportClients(ctx context.Context, cs []LegacyClient) ([]string, error) {
	var out []string
	if cs == nil {
		cs = []LegacyClient{}
	}
	return out, c.call(ctx, "clients/import", request{Legacy: cs}, &out)
}

// ListClients implements [Service.ListClients].
func (c *Client) ListClients(ctx context.Context, status string) ([]ClientView, error) {
	var out []ClientView
	return out, c.call(ctx, "clients/list", request{Status: status}, &out)
}

// ShowClient implements [Service.ShowClient].
func (c *Client) ShowClient(ctx context.Context, id string) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/show", request{ID: id}, &out)
}

// ApproveClient implements [Service.ApproveClient].
func (c *Client) ApproveClient(ctx context.Context, id string) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/approve", request{ID: id}, &out)
}

// ApproveRevision implements [Service.ApproveRevision].
func (c *Client) ApproveRevision(ctx context.Context, id, revision string) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/approve", request{ID: id, Revision: revision}, &out)
}

// RejectClient implements [Service.RejectClient].
func (c *Client) RejectClient(ctx context.Context, id, reason string) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/reject", request{ID: id, Reason: reason}, &out)
}

// RejectRevision implements [Service.RejectRevision].
func (c *Client) RejectRevision(ctx context.Context, id, reason, revision string) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/reject", request{ID: id, Reason: reason, Revision: revision}, &out)
}

// GenerateSecret implements [Service.GenerateSecret].
func (c *Client) GenerateSecret(ctx context.Context, id string) (CreatedSecret, error) {
	var out CreatedSecret
	return out, c.call(ctx, "clients/secrets/generate", request{ID: id}, &out)
}

// ListSecrets implements [Service.ListSecrets].
func (c *Client) ListSecrets(ctx context.Context, id string) ([]SecretView, error) {
	var out []SecretView
	return out, c.call(ctx, "clients/secrets/list", request{ID: id}, &out)
}

// RevokeSecret implements [Service.RevokeSecret].
func (c *Client) RevokeSecret(ctx context.Context, id, secretID string) error {
	return c.call(ctx, "clients/secrets/revoke", request{ID: id, SecretID: secretID}, nil)
}

// SetScopes implements [Service.SetScopes].
func (c *Client) SetScopes(ctx context.Context, id string, scopes []string) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/scopes/set", request{ID: id, Scopes: scopes}, &out)
}

// ForceScopes implements [Service.ForceScopes].
func (c *Client) ForceScopes(ctx context.Context, id string, scopes []string) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/scopes/set", request{ID: id, Scopes: scopes, Force: true}, &out)
}

// EditClient implements [Service.EditClient].
func (c *Client) EditClient(ctx context.Context, id string, e ClientEdit) (EditResult, error) {
	var out EditResult
	return out, c.call(ctx, "clients/edit", request{ID: id, Edit: &e}, &out)
}

// SetRedirectURIs implements [Service.SetRedirectURIs].
func (c *Client) SetRedirectURIs(ctx context.Context, id string, uris []string) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/redirect-uris/set", request{ID: id, URIs: uris}, &out)
}

// SetClientOptions implements [Service.SetClientOptions].
func (c *Client) SetClientOptions(ctx context.Context, id string, o ClientOptions) (ClientView, error) {
	var out ClientView
	return out, c.call(ctx, "clients/options/set", request{ID: id, Options: &o}, &out)
}

// ListKeys implements [Service.ListKeys].
func (c *Client) ListKeys(ctx context.Context) ([]keys.Info, error) {
	var out []keys.Info
	return out, c.call(ctx, "keys/list", request{}, &out)
}

// RotateKeys implements [Service.RotateKeys].
func (c *Client) RotateKeys(ctx context.Context, alg string) (keys.RotateResult, error) {
	var out keys.RotateResult
	return out, c.call(ctx, "keys/rotate", request{Alg: alg}, &out)
}

// RevokeKey implements [Service.RevokeKey].
func (c *Client) RevokeKey(ctx context.Context, kid string) error {
	return c.call(ctx, "keys/revoke", request{KID: kid}, nil)
}
