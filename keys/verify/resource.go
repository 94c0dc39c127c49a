package verify

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// RFC 9728 (OAuth 2.0 Protected Resource Metadata) for Go resource
// servers: the document a client discovers the authorization server
// from, where it is served, and the challenge that points to it. The
// gateway (`oauthd gateway`) uses the same.

// WellKnownResourcePath is the well-known path of RFC 9728 §3.
const WellKnownResourcePath = "/.well-known/oauth-protected-resource"

// ResourceMetadata is the RFC 9728 §2 document of one protected resource.
type ResourceMetadata struct {
	// Resource is the resource identifier: an https (or http) URL without
	// query or fragment, exactly as clients send it as RFC 8707's
	// resource and as its tokens' aud.
	Resource string `json:"resource"`
	// AuthorizationServers are the issuers whose tokens it accepts.
	AuthorizationServers []string `json:"authorization_servers"`
	// ScopesSupported are the scopes its routes need.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// BearerMethodsSupported: "header" (RFC 6750 §2.1), the only one the
	// guard takes.
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	// DPoPSigningAlgValuesSupported: the DPoP proof algorithms accepted
	// (RFC 9449 §5.1 via RFC 9728 §2).
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported,omitempty"`
	// ResourceName is a human-readable name; "" omits it.
	ResourceName string `json:"resource_name,omitempty"`
}

// CheckResourceID checks a resource identifier (RFC 9728 §1.2: https, no
// query, no fragment; http is accepted for loopback tests and private
// networks).
func CheckResourceID(resource string) error {
	u, err := url.Parse(resource)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Opaque != "":
		return errors.New("a resource identifier must be an absolute https URL with a host")
	case u.RawQuery != "" || strings.Contains(resource, "?") || u.Fragment != "" || strings.Contains(resource, "#"):
		return errors.New("a resource identifier has no query or fragment (RFC 9728 §1.2)")
	}
	return nil
}

// ResourceMetadataURL returns where the metadata of resource is served
// (RFC 9728 §3.1): the well-known path inserted between the host and the
// resource's path, so https://api.example.com/mcp has
// https://api.example.com/.well-known/oauth-protected-resource/mcp, and
// https://api.example.com has https://api.example.com/.well-known/oauth-protected-resource.
func ResourceMetadataURL(resource string) (string, error) {
	if err := CheckResourceID(resource); err != nil {
		return "", err
	}
	u, _ := url.Parse(resource)
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host + WellKnownResourcePath + p, nil
}

// Handler serves m as JSON (GET and HEAD), cacheable for an hour: the
// document changes only with the resource server's configuration.
func (m ResourceMetadata) Handler() http.Handler {
	if m.BearerMethodsSupported == nil {
		m.BearerMethodsSupported = []string{"header"}
	}
	if m.AuthorizationServers == nil {
		m.AuthorizationServers = []string{}
	}
	body, err := json.Marshal(m)
	if err != nil {
		panic("verify: marshal resource metadata: " + err.Error()) // strings only: cannot fail
	}
	body = append(body, '\n')
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "public, max-age=3600")
		h.Set("Access-Control-Allow-Origin", "*") // public metadata, fetched by browser-based clients too
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusOK)
			return
		}
		_, _ = w.Write(body)
	})
}

// ResourceChallenge adds the RFC 9728 §5.1 resource_metadata parameter
// and, when scopes is not empty, RFC 6750 §3's scope (what the request
// needs: the MCP profile's scope selection) to the WWW-Authenticate
// challenge www (e.g. `Bearer` or `Bearer error="invalid_token"`). An
// empty metadataURL adds only the scope. A scope already in www is not
// repeated.
func ResourceChallenge(www, metadataURL string, scopes []string) string {
	var params []string
	if metadataURL != "" {
		params = append(params, `resource_metadata="`+metadataURL+`"`)
	}
	if len(scopes) > 0 && !strings.Contains(www, ` scope="`) && !strings.Contains(www, `,scope="`) {
		params = append(params, `scope="`+strings.Join(scopes, " ")+`"`)
	}
	if len(params) == 0 {
		return www
	}
	sep := ", "
	if !strings.Contains(www, " ") {
		sep = " " // a bare scheme: its first parameter
	}
	return www + sep + strings.Join(params, ", ")
}
