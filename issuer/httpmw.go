package issuer

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"
)

// HeadAsGet wraps the server's handler so that HEAD works wherever GET
// does (RFC 9110 §9.3.2): the request is routed and handled as a GET, and
// net/http, which still holds the original HEAD request, drops the body.
// Status and headers are the GET's. (An Echo Pre middleware cannot do it:
// Echo routes on the request it was first given.)
func HeadAsGet(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			r = r.WithContext(r.Context()) // a shallow copy
			r.Method = http.MethodGet
		}
		next.ServeHTTP(w, r)
	})
}

// HSTSValue is the Strict-Transport-Security of an https deployment: two
// years. Without includeSubDomains: the server cannot know whether every
// subdomain of its host serves https, and its cookies need no help from
// it (they are __Host- cookies, which no subdomain can set).
const HSTSValue = "max-age=63072000"

// HSTS returns a middleware that sends Strict-Transport-Security
// (RFC 6797) on every response when any of urls (the base and app URLs)
// is https, and a no-op middleware otherwise. Browsers ignore the header
// on plain-http responses (RFC 6797 §8.1), so one server may serve both.
func HSTS(urls ...string) echo.MiddlewareFunc {
	on := false
	for _, s := range urls {
		if u, err := url.Parse(s); err == nil && u.Scheme == "https" {
			on = true
		}
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if !on {
			return next
		}
		return func(c echo.Context) error {
			c.Response().Header().Set("Strict-Transport-Security", HSTSValue)
			return next(c)
		}
	}
}
