package issuer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"oauthd/data"
	"oauthd/data/netsafe"
)

// cimdEnv is a token env whose documents are served over HTTPS by the
// test on 127.0.0.1 (private networks allowed, as the operator would for
// tests), with a document per path.
type cimdEnv struct {
	*tkEnv
	srv     *httptest.Server
	host    string
	fetches atomic.Int64
	docs    map[string]func(w http.ResponseWriter, self string)
}

func newCIMDEnv(t *testing.T, allowPrivate bool) *cimdEnv {
	env := &cimdEnv{docs: map[string]func(http.ResponseWriter, string){}}
	env.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		env.fetches.Add(1)
		f, ok := env.docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		f(w, env.srv.URL+r.URL.Path)
	}))
	t.Cleanup(env.srv.Close)
	u, _ := url.Parse(env.srv.URL)
	env.host = u.Host
	fetcher := netsafe.New(netsafe.Options{AllowPrivate: allowPrivate, TLS: env.srv.Client().Transport.(*http.Transport).TLSClientConfig, Timeout: time.Second})
	env.tkEnv = newTkEnv(t, func(c *Config) { c.MetadataFetcher = fetcher })
	return env
}

// serveDoc serves a document at path with body (a format with %s for the
// URL itself) and the Cache-Control header cc ("" for none).
func (env *cimdEnv) serveDoc(path, body, cc string) string {
	env.docs[path] = func(w http.ResponseWriter, self string) {
		w.Header().Set("Content-Type", "application/json")
		if cc != "" {
			w.Header().Set("Cache-Control", cc)
		}
		fmt.Fprintf(w, body, self)
	}
	return env.srv.URL + path
}

const cimdGood = `{"client_id":%q,"client_name":"Claude","redirect_uris":["https://claude.example/api/mcp/auth_callback","http://127.0.0.1/callback"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"]}`

func (env *cimdEnv) allow(scopes ...string) {
	env.t.Helper()
	if err := env.store.PutAgentHost(context.Background(), data.AgentHost{Host: env.host, Scopes: scopes, AllowedAt: tkT0}); err != nil {
		env.t.Fatal(err)
	}
}

func cimdQuery(id, redirect string, extra ...string) url.Values {
	q := url.Values{"client_id": {id}, "redirect_uri": {redirect}, "response_type": {"code"}, "scope": {"PROFILE_READ"},
		"state": {"st"}, "code_challenge": {tkChallenge(tkVerifier)}, "code_challenge_method": {"S256"}}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	return q
}

func pageTitle(err error) string {
	if pe, ok := errors.AsType[*PageError](err); ok {
		return pe.Title + ": " + pe.Message()
	}
	if err == nil {
		return "<nil>"
	}
	return "not a page: " + err.Error()
}

func TestClientMetadataDocumentFlow(t *testing.T) {
	env := newCIMDEnv(t, true)
	ctx := context.Background()
	id := env.serveDoc("/oauth/client.json", cimdGood, "max-age=600")
	cb := "https://claude.example/api/mcp/auth_callback"

	// A host the operator has not allowed: the page, nothing fetched,
	// nothing stored.
	if _, err := env.s.CheckAuthorize(ctx, cimdQuery(id, cb)); !strings.HasPrefix(pageTitle(err), "Application not available") {
		t.Fatalf("host not allowed: %s", pageTitle(err))
	}
	if n := env.fetches.Load(); n != 0 {
		t.Errorf("%d fetches for a host not allowed; want none", n)
	}

	env.allow("PROFILE_READ", "BOOKING_READ")
	req, err := env.s.ParseAuthorize(ctx, cimdQuery(id, cb))
	if err != nil {
		t.Fatalf("allowed host: %s", pageTitle(err))
	}
	if req.Client.Name != "Claude" || req.Client.MetadataHost != env.host || req.Client.Type != data.Public {
		t.Errorf("client %+v; want the document's name, its host, public", req.Client)
	}
	if _, err := env.store.GetClient(ctx, id); !errors.Is(err, data.ErrNotFound) {
		t.Errorf("a client was stored before consent: %v", err)
	}
	// The loopback redirect URI of the document on any port (RFC 8252).
	if _, err := env.s.CheckAuthorize(ctx, cimdQuery(id, "http://127.0.0.1:49152/callback")); err != nil {
		t.Errorf("loopback on another port: %s", pageTitle(err))
	}
	// A redirect URI the document does not vouch for: a page, no redirect.
	if _, err := env.s.CheckAuthorize(ctx, cimdQuery(id, "https://evil.example/cb")); !strings.HasPrefix(pageTitle(err), "Unregistered redirect URI") {
		t.Errorf("redirect URI not in the document: %s", pageTitle(err))
	}
	// Scopes beyond the host's ceiling.
	_, err = env.s.CheckAuthorize(ctx, cimdQuery(id, cb, "scope", "PROFILE_READ TEAM_PROFILE_READ"))
	if re, ok := errors.AsType[*RedirectError](err); !ok || re.Err.Code != "invalid_scope" {
		t.Errorf("scope beyond the host's: %v; want invalid_scope", err)
	}
	// Without PKCE: refused (a public client).
	q := cimdQuery(id, cb)
	q.Del("code_challenge")
	if _, err := env.s.CheckAuthorize(ctx, q); err == nil {
		t.Error("no code_challenge accepted")
	}
	if n := env.fetches.Load(); n != 1 {
		t.Errorf("%d fetches; want 1 (max-age=600 caches it)", n)
	}

	// Consent stores the client; the code trades at the token endpoint.
	loc, err := env.s.Approve(ctx, cimdQuery(id, cb), tkUser)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := env.store.GetClient(ctx, id)
	if err != nil || stored.MetadataHost != env.host || stored.Status != data.StatusApproved {
		t.Fatalf("after consent: %+v, %v", stored, err)
	}
	u, _ := url.Parse(loc)
	tok := env.mustTokens(env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", u.Query().Get("code"),
		"redirect_uri", cb, "client_id", id, "code_verifier", tkVerifier)}))
	if tok.Scope != "PROFILE_READ" {
		t.Errorf("scope %q", tok.Scope)
	}

	// The cache's bound: after max-age the document is fetched again.
	env.advance(11 * time.Minute)
	if _, err := env.s.CheckAuthorize(ctx, cimdQuery(id, cb)); err != nil {
		t.Fatal(pageTitle(err))
	}
	if n := env.fetches.Load(); n != 2 {
		t.Errorf("%d fetches after max-age; want 2", n)
	}
}

// TestClientMetadataDocumentAttacks is the attacker's list against the
// documents: each ends on an error page (never a redirect) and stores
// nothing.
func TestClientMetadataDocumentAttacks(t *testing.T) {
	env := newCIMDEnv(t, true)
	ctx := context.Background()
	env.allow("PROFILE_READ")
	cb := "https://claude.example/api/mcp/auth_callback"
	env.docs["/redirect"] = func(w http.ResponseWriter, self string) {
		w.Header().Set("Location", "https://169.254.169.254/latest/meta-data/")
		w.WriteHeader(http.StatusFound)
	}
	env.docs["/huge"] = func(w http.ResponseWriter, self string) {
		fmt.Fprintf(w, `{"client_id":%q,"redirect_uris":[%q],"x":"`, self, cb)
		for range 10 << 10 {
			if _, err := w.Write([]byte(strings.Repeat("a", 1024))); err != nil {
				return
			}
		}
	}
	env.docs["/slow"] = func(w http.ResponseWriter, self string) { time.Sleep(2 * time.Second) }
	for path, body := range map[string]string{
		"/other-id":     `{"client_id":"https://claude.example/oauth/client.json","redirect_uris":["` + cb + `"]%.0s}`,
		"/no-redirects": `{"client_id":%q}`,
		"/confidential": `{"client_id":%q,"redirect_uris":["` + cb + `"],"token_endpoint_auth_method":"client_secret_basic"}`,
		"/secret":       `{"client_id":%q,"redirect_uris":["` + cb + `"],"client_secret":"s"}`,
		"/not-json":     `<html>%s</html>`,
		"/bad-uri":      `{"client_id":%q,"redirect_uris":["http://evil.example/cb"]}`,
	} {
		env.serveDoc(path, body, "")
	}
	for _, path := range []string{"/other-id", "/no-redirects", "/confidential", "/secret", "/not-json", "/bad-uri", "/redirect", "/huge", "/slow", "/missing"} {
		id := env.srv.URL + path
		_, err := env.s.CheckAuthorize(ctx, cimdQuery(id, cb))
		if !strings.HasPrefix(pageTitle(err), "Application unavailable") {
			t.Errorf("%s: %s; want the Application unavailable page", path, pageTitle(err))
		}
	}
	clients, _ := env.store.ListClients(ctx, "")
	for _, c := range clients {
		if c.MetadataHost != "" {
			t.Errorf("client %s stored by a refused document", c.ID)
		}
	}

	// SSRF: without --client-metadata-private-networks, a document on a
	// loopback, link-local (metadata service) or private address is
	// refused at the connection, whatever the name says.
	strict := newCIMDEnv(t, false)
	strict.serveDoc("/client.json", cimdGood, "")
	for _, host := range []string{strict.host, "169.254.169.254", "10.0.0.8", "192.168.1.10", "localhost:" + strings.Split(strict.host, ":")[1]} {
		if err := strict.store.PutAgentHost(ctx, data.AgentHost{Host: host, Scopes: []string{"PROFILE_READ"}, AllowedAt: tkT0}); err != nil {
			t.Fatal(err)
		}
		_, err := strict.s.CheckAuthorize(ctx, cimdQuery("https://"+host+"/client.json", cb))
		if msg := pageTitle(err); !strings.Contains(msg, "not on the public internet") {
			t.Errorf("document on %s: %s; want refused as not public", host, msg)
		}
	}
	if n := strict.fetches.Load(); n != 0 {
		t.Errorf("%d requests reached the loopback server; want none", n)
	}
}
