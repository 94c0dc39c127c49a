package issuer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/lestrrat-go/httpcc"

	"oauthd/data"
	"oauthd/data/netsafe"
)

// Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document),
// the MCP authorization profile's way for an AI assistant to identify
// itself, in one place:
//
//   - A client_id that is an https URL with a path
//     ([data.IsMetadataClientID]) names a document. Its host must have
//     been allowed by the operator (`oauthd agents allow`, a
//     [data.AgentHost]); otherwise the page says the app is not available
//     here, and nothing is fetched.
//   - The document is fetched through data/netsafe (https, no redirect, at
//     most 5 KiB, a short timeout, public addresses only unless the
//     operator allows private networks), and cached by its Cache-Control
//     max-age within [Config.MetadataMinTTL, Config.MetadataMaxTTL].
//   - It must name itself (client_id equal to its URL), list
//     redirect_uris, and be a public client (token_endpoint_auth_method
//     none; PKCE S256 is required of every public client).
//   - A fetch or validation failure is an error page, never a redirect.
//   - The client is a public, approved [data.Client] built in memory with
//     the document's name and redirect URIs and the host's scopes; it is
//     stored only when a signed-in user consents (ApproveLogin), so that
//     the token endpoint knows it. Nothing is stored for a stranger.

// Bounds of the metadata documents' cache.
const (
	DefaultMetadataMinTTL = time.Minute
	DefaultMetadataMaxTTL = 24 * time.Hour
	// metadataCacheEntries bounds the cached documents.
	metadataCacheEntries = 1024
	// metadataMaxBytes is the largest document fetched.
	metadataMaxBytes = 5 << 10
)

// metadataDoc is the part of a client ID metadata document oauthd reads
// (RFC 7591 §2 names).
type metadataDoc struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	ClientSecret            *string  `json:"client_secret"`
	ClientSecretExpiresAt   any      `json:"client_secret_expires_at"`
}

type metaEntry struct {
	doc     metadataDoc
	expires time.Time
}

// metaDocs fetches and caches documents.
type metaDocs struct {
	fetch    func(ctx context.Context, url string) (*netsafe.Response, error)
	min, max time.Duration
	now      func() time.Time

	mu    sync.Mutex
	cache map[string]metaEntry
}

func newMetaDocs(cfg Config) *metaDocs {
	f := cfg.MetadataFetcher
	if f == nil {
		f = netsafe.New(netsafe.Options{AllowPrivate: cfg.MetadataPrivateNetworks})
	}
	return &metaDocs{
		fetch: func(ctx context.Context, url string) (*netsafe.Response, error) {
			return f.Get(ctx, url, "application/json", metadataMaxBytes)
		},
		min: cfg.MetadataMinTTL, max: cfg.MetadataMaxTTL, now: cfg.Now, cache: map[string]metaEntry{},
	}
}

// errMetadata is a document that cannot be used; its text is for the user.
type errMetadata struct{ reason string }

func (e *errMetadata) Error() string { return e.reason }

// get returns the validated document at url, from the cache or fetched.
func (m *metaDocs) get(ctx context.Context, url string) (metadataDoc, error) {
	now := m.now()
	m.mu.Lock()
	e, ok := m.cache[url]
	m.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.doc, nil
	}
	resp, err := m.fetch(ctx, url)
	if err != nil {
		return metadataDoc{}, &errMetadata{reason: "it could not be fetched (" + fetchReason(err) + ")"}
	}
	doc, err := parseMetadataDoc(resp.Body, url)
	if err != nil {
		return metadataDoc{}, err
	}
	ttl := m.min
	if cc, err := httpcc.ParseResponse(resp.Header.Get("Cache-Control")); err == nil {
		if age, ok := cc.MaxAge(); ok && !cc.NoStore() && cc.NoCache() == nil {
			ttl = time.Duration(age) * time.Second
		}
	}
	ttl = min(max(ttl, m.min), m.max)
	m.mu.Lock()
	if len(m.cache) >= metadataCacheEntries {
		for k, v := range m.cache {
			if !now.Before(v.expires) {
				delete(m.cache, k)
			}
		}
		for k := range m.cache { // still full: drop any one
			if len(m.cache) < metadataCacheEntries {
				break
			}
			delete(m.cache, k)
		}
	}
	m.cache[url] = metaEntry{doc: doc, expires: now.Add(ttl)}
	m.mu.Unlock()
	return doc, nil
}

// fetchReason says why a fetch failed, in words for the user (no
// addresses of the operator's network).
func fetchReason(err error) string {
	switch {
	case errors.Is(err, netsafe.ErrForbiddenAddress):
		return "its host is not on the public internet"
	case errors.Is(err, netsafe.ErrRedirect):
		return "it answered a redirect, which is not followed"
	case errors.Is(err, netsafe.ErrTooLarge):
		return "it is larger than 5 KiB"
	case errors.Is(err, netsafe.ErrStatus):
		return "it did not answer 200"
	case errors.Is(err, netsafe.ErrNotHTTPS):
		return "it is not an https URL"
	case errors.Is(err, context.DeadlineExceeded):
		return "it did not answer in time"
	}
	return "the connection failed"
}

// parseMetadataDoc validates a document fetched from url.
func parseMetadataDoc(body []byte, url string) (metadataDoc, error) {
	bad := func(format string, args ...any) (metadataDoc, error) {
		return metadataDoc{}, &errMetadata{reason: fmt.Sprintf(format, args...)}
	}
	var doc metadataDoc
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&doc); err != nil || dec.More() {
		return bad("it is not a JSON object of client metadata")
	}
	switch {
	case doc.ClientID != url:
		return bad("its client_id is not its own URL")
	case len(doc.RedirectURIs) == 0:
		return bad("it lists no redirect_uris")
	case len(doc.RedirectURIs) > data.MaxRedirectURIs:
		return bad("it lists more than %d redirect_uris", data.MaxRedirectURIs)
	case doc.TokenEndpointAuthMethod != "" && doc.TokenEndpointAuthMethod != "none":
		return bad("its token_endpoint_auth_method is not none: only public clients (with PKCE) are accepted from metadata documents")
	case doc.ClientSecret != nil || doc.ClientSecretExpiresAt != nil:
		return bad("it carries a client secret, which a metadata document must not")
	}
	for i, u := range doc.RedirectURIs {
		if err := data.ValidateRedirectURI(u); err != nil || slices.Contains(doc.RedirectURIs[:i], u) {
			return bad("its redirect URI %s is not valid", authzQuote(u))
		}
	}
	for _, g := range doc.GrantTypes {
		if g != data.GrantAuthorizationCode && g != data.GrantRefreshToken {
			return bad("it asks for grant type %s, which is not supported", authzQuote(g))
		}
	}
	for _, r := range doc.ResponseTypes {
		if r != "code" {
			return bad("it asks for response type %s, which is not supported", authzQuote(r))
		}
	}
	if doc.ClientName != "" && (len(doc.ClientName) > data.MaxNameLen || data.CheckDisplayText("client_name", doc.ClientName) != nil) {
		return bad("its client_name is longer than %d bytes or holds invisible or control characters", data.MaxNameLen)
	}
	return doc, nil
}

// metadataClient is the client of the metadata document at id, built in
// memory (see the rules above), or the *PageError to show.
func (s *Server) metadataClient(ctx context.Context, id string) (data.Client, error) {
	host, err := data.MetadataClientHost(id)
	if err != nil {
		return data.Client{}, NewPageError("Unknown application", "The client_id parameter is not a valid client ID.")
	}
	review, err := s.store.GetAgentHost(ctx, host)
	if errors.Is(err, data.ErrNotFound) {
		return data.Client{}, NewPageError("Application not available",
			fmt.Sprintf("The application %s is not available on this platform: AI assistants from %s have not been allowed by the platform's administrators.", authzQuote(id), host))
	}
	if err != nil {
		return data.Client{}, fmt.Errorf("authorize: get agent host: %w", err)
	}
	doc, err := s.meta.get(ctx, id)
	if me, ok := errors.AsType[*errMetadata](err); ok {
		s.log.LogAttrs(ctx, slog.LevelInfo, "client metadata document refused",
			slog.String("client_id", id), slog.String("reason", me.reason))
		return data.Client{}, NewPageError("Application unavailable",
			"The application's client metadata document at "+authzQuote(id)+" cannot be used: "+me.reason+". The application must fix it; nothing was stored.")
	}
	if err != nil {
		return data.Client{}, err
	}
	name := doc.ClientName
	if name == "" {
		name = host
	}
	now := s.now().UTC()
	return data.Client{ID: id, Name: name, Type: data.Public, RedirectURIs: doc.RedirectURIs,
		Scopes: slices.Clone(review.Scopes), Status: data.StatusApproved, MetadataHost: host, CreatedAt: now, UpdatedAt: now}, nil
}

// storeMetadataClient stores (or refreshes) the client of a metadata
// document once a signed-in user consents to it: the token endpoint
// finds it there. The record is the one the consent was given to.
func (s *Server) storeMetadataClient(ctx context.Context, c data.Client) error {
	_, err := s.store.UpdateClient(ctx, c.ID, func(old data.Client) (data.Client, error) {
		c.CreatedAt = old.CreatedAt
		return c, nil
	})
	if errors.Is(err, data.ErrNotFound) {
		err = s.store.CreateClient(ctx, c)
		if errors.Is(err, data.ErrExists) { // another consent stored it first
			return s.storeMetadataClient(ctx, c)
		}
	}
	return err
}
