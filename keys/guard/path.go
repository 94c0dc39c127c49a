package guard

import (
	"errors"
	"net/url"
	"strings"
)

// ErrBadPath is returned by [CanonicalPath] for a request path the guard
// refuses to interpret.
var ErrBadPath = errors.New("request path is not canonical")

// CanonicalPath returns the path the guard matches and forwards for a
// request URL, or an error wrapping [ErrBadPath].
//
// The guard does not normalise ambiguous paths, it refuses them, so that
// the route it checks is the route the application serves: a path with an
// empty segment ("//"), a "." or ".." segment (also when percent-encoded),
// a percent-encoded slash or backslash, a backslash or a control character
// is refused. The one normalisation is a single trailing slash, which is
// dropped: "/v2/me/" is checked, and forwarded by the proxy, as "/v2/me".
// When the path is already canonical the result shares its memory (no
// allocation).
func CanonicalPath(u *url.URL) (string, error) {
	p := u.Path
	if p == "" || p[0] != '/' {
		return "", ErrBadPath
	}
	if raw := u.RawPath; raw != "" && strings.IndexByte(raw, '%') >= 0 {
		l := strings.ToLower(raw)
		if strings.Contains(l, "%2f") || strings.Contains(l, "%5c") {
			return "", ErrBadPath
		}
	}
	if len(p) > 1 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < 0x20 || c == 0x7f || c == '\\' {
			return "", ErrBadPath
		}
	}
	if p == "/" {
		return p, nil
	}
	rest := p[1:]
	for {
		seg, tail, more := strings.Cut(rest, "/")
		if seg == "" || seg == "." || seg == ".." {
			return "", ErrBadPath
		}
		if !more {
			return p, nil
		}
		rest = tail
	}
}
