package data

import (
	"net/url"
	"slices"
	"strings"
)

// AllowedOrigins returns the web origins (RFC 6454: scheme://host[:port])
// from which browsers may call the token and revocation endpoints for c:
// for a public client, the origins of its http and https redirect URIs
// (a single-page app's redirect URI is on its own origin; a mobile app's
// custom-scheme URI has no web origin); for a confidential client none (a
// browser cannot keep its secret). Derived, not stored: a new origin
// comes only with a new redirect URI, which an approved client's owner
// cannot add without review. Sorted, without duplicates.
func AllowedOrigins(c Client) []string {
	if c.Type != Public {
		return nil
	}
	var out []string
	for _, u := range c.RedirectURIs {
		if o, ok := OriginOf(u); ok && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	slices.Sort(out)
	return out
}

// OriginOf returns the ASCII serialization of the origin of an absolute
// http or https URI (lower-case scheme and host, the port only when it is
// not the scheme's default), as browsers send it in the Origin header.
func OriginOf(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, true
}
