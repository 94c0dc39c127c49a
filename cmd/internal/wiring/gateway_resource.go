package wiring

import (
	"net/http"
	"slices"
	"strings"

	"oauthd/keys/verify"
)

// gatewayResources are the gateway's RFC 9728 documents: one for its
// --public-url (at the well-known path), and one for each --audience
// under it with a path (at the path-suffixed well-known URL of RFC 9728
// §3.1), e.g. --audience https://api.example.com/mcp is served at
// /.well-known/oauth-protected-resource/mcp. A 401 or 403 names the
// document of the longest such path the request is under, else the
// root's. Without --public-url there is none: the gateway does not know
// its own URL (the Host header is the client's to choose).
type gatewayResources struct {
	root     string            // the root document's URL
	byPath   map[string]string // resource path ("/mcp") → its document's URL
	handlers map[string]http.Handler
	paths    []string // the keys of byPath, longest first
}

// resourceMetadata builds the documents of cfg; nil without --public-url.
func (cfg *GatewayConfig) resourceMetadata() *gatewayResources {
	if cfg.PublicURL == "" {
		return nil
	}
	base := strings.TrimRight(cfg.PublicURL, "/")
	var scopes []string
	for _, r := range cfg.Table.Routes() {
		for _, s := range r.Scopes {
			if !slices.Contains(scopes, s) {
				scopes = append(scopes, s)
			}
		}
	}
	slices.Sort(scopes)
	doc := func(resource string) http.Handler {
		return verify.ResourceMetadata{
			Resource:                      resource,
			AuthorizationServers:          []string{strings.TrimRight(cfg.Issuer, "/")},
			ScopesSupported:               scopes,
			BearerMethodsSupported:        []string{"header"},
			DPoPSigningAlgValuesSupported: verify.DPoPAlgs(),
		}.Handler()
	}
	m := &gatewayResources{byPath: map[string]string{}, handlers: map[string]http.Handler{}}
	m.root = base + verify.WellKnownResourcePath
	m.handlers[verify.WellKnownResourcePath] = doc(base)
	for _, a := range cfg.Audience {
		p, ok := strings.CutPrefix(a, base+"/")
		if !ok || p == "" {
			continue
		}
		p = "/" + strings.TrimRight(p, "/")
		u, err := verify.ResourceMetadataURL(a)
		if err != nil {
			continue
		}
		m.byPath[p] = u
		m.handlers[verify.WellKnownResourcePath+p] = doc(a)
		m.paths = append(m.paths, p)
	}
	slices.SortFunc(m.paths, func(a, b string) int { return len(b) - len(a) })
	return m
}

// metadataURL is guard.Config.MetadataURL: the document of the resource
// the request path is under.
func (m *gatewayResources) metadataURL(path string) string {
	if m == nil {
		return ""
	}
	for _, p := range m.paths {
		if path == p || strings.HasPrefix(path, p+"/") {
			return m.byPath[p]
		}
	}
	return m.root
}

// serve answers a request for one of the documents and reports whether it
// did.
func (m *gatewayResources) serve(w http.ResponseWriter, r *http.Request) bool {
	if m == nil || !strings.HasPrefix(r.URL.Path, verify.WellKnownResourcePath) {
		return false
	}
	h, ok := m.handlers[r.URL.Path]
	if !ok {
		return false
	}
	h.ServeHTTP(w, r)
	return true
}

// gatewayHandler serves GET /healthz and the protected resource metadata
// (gateway_resource.go) itself and hands everything else to
// the proxy. It is not a ServeMux on purpose: ServeMux would redirect
// unclean paths before the guard sees them, and the guard refuses them
// itself (guard.CanonicalPath).
func gatewayHandler(proxy http.Handler, meta *gatewayResources) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if meta.serve(w, r) {
			return
		}
		if r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write([]byte("ok\n"))
			return
		}
		proxy.ServeHTTP(w, r)
	})
}
