package guard

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"oauthd/issuer/scope"
	"oauthd/keys/verify"
)

// Verifier verifies an access token offline; *verify.Verifier satisfies it.
// Verify returns an error for any token that is not valid (expired, badly
// signed, wrong issuer or audience, ...), and never nil claims without an
// error.
type Verifier interface {
	Verify(ctx context.Context, token string) (*verify.Claims, error)
}

// Config configures a [Guard].
type Config struct {
	// Verifier checks bearer tokens. Required.
	Verifier Verifier
	// Table is the route table to enforce. Default: [DefaultTable].
	Table *Table
	// Logger receives one record per refused request (never the token).
	// Default: a logger that discards.
	Logger *slog.Logger
}

// Guard enforces a route table on incoming requests, as middleware for
// Echo ([Guard.Echo]) or net/http ([Guard.HTTP]).
//
// The rules, from api-routes.md and CONTRACT.md "API authorization errors":
//   - The bearer token comes from the Authorization header only
//     (RFC 6750 §2.1; the scheme is case-insensitive). A header that is
//     not "Bearer <b64token>", or more than one Authorization header, is a
//     malformed token.
//   - A public route needs no token. A valid token sent to it puts its
//     claims in the request context; an invalid one is ignored.
//   - Any other request needs a valid token: a missing, malformed or
//     invalid one gets 401 with WWW-Authenticate: Bearer
//     error="invalid_token" (RFC 6750 §3.1) and a JSON body.
//   - A token with the explicit unrestricted claim may call every route,
//     including routes that are not in the table.
//   - Any other token must cover every scope of the route (an ORG_ scope
//     covers the TEAM_ scope of the same suffix, see [scope.Covers]), else
//     403 insufficient_scope naming the required and granted scopes. A route
//     that is not in the table is refused to it with 403: it is not
//     available to third-party tokens.
//   - A request path that is not canonical (see [CanonicalPath]) gets 400
//     invalid_request, whatever the token.
//
// On success the next handler sees the claims through [ClaimsFrom] and the
// canonical path in r.URL.Path.
type Guard struct {
	verifier Verifier
	table    *Table
	logger   *slog.Logger
}

// New returns a Guard. It panics when cfg.Verifier is nil: a guard that
// cannot verify tokens is a wiring defect, not a runtime condition.
func New(cfg Config) *Guard {
	if cfg.Verifier == nil {
		panic("guard.New: Config.Verifier is nil")
	}
	g := &Guard{verifier: cfg.Verifier, table: cfg.Table, logger: cfg.Logger}
	if g.table == nil {
		g.table = DefaultTable()
	}
	if g.logger == nil {
		g.logger = slog.New(slog.DiscardHandler)
	}
	return g
}

// Table returns the route table the guard enforces.
func (g *Guard) Table() *Table { return g.table }

// HTTP returns next wrapped by the guard.
func (g *Guard) HTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r2, d := g.check(r)
		if d != nil {
			g.deny(w, r, d)
			return
		}
		next.ServeHTTP(w, r2)
	})
}

// Echo returns the guard as Echo middleware. Use it per route or per
// group (after routing); the guard answers refused requests itself and
// does not call Echo's error handler.
func (g *Guard) Echo() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			r2, d := g.check(r)
			if d != nil {
				g.deny(c.Response(), r, d)
				return nil
			}
			c.SetRequest(r2)
			return next(c)
		}
	}
}

// denial is a refused request.
type denial struct {
	status   int
	code     string // RFC 6750 §3.1 error code
	desc     string
	wwwAuth  string
	required []string
	granted  []string
	path     string
	clientID string
	err      error // why verification failed, for the log only
}

const (
	descMissing    = "missing bearer token"
	descMalformed  = "malformed Authorization header: expected Bearer <token>"
	descInvalid    = "the access token is invalid, expired or not signed by the issuer"
	descNotInTable = "this route is not available to third-party tokens"
	descBadPath    = "the request path is not canonical (empty, '.' or '..' segments, or an encoded slash)"

	wwwMissing    = `Bearer error="invalid_token", error_description="` + descMissing + `"`
	wwwMalformed  = `Bearer error="invalid_token", error_description="malformed Authorization header"`
	wwwInvalid    = `Bearer error="invalid_token", error_description="` + descInvalid + `"`
	wwwNotInTable = `Bearer error="insufficient_scope", error_description="` + descNotInTable + `"`
)

// check decides on r. It returns the request to pass on (with the claims
// and the canonical path), or the reason to refuse it.
func (g *Guard) check(r *http.Request) (*http.Request, *denial) {
	p, err := CanonicalPath(r.URL)
	if err != nil {
		return nil, &denial{status: http.StatusBadRequest, code: "invalid_request", desc: descBadPath, path: r.URL.Path}
	}
	e := g.table.match(r.Method, p)
	token, present, ok := bearer(r.Header)
	ctx := r.Context()

	if e != nil && e.route.Public {
		if present && ok {
			if c, err := g.verifier.Verify(ctx, token); err == nil && c != nil {
				return pass(r, p, c), nil
			}
		}
		return pass(r, p, nil), nil
	}

	switch {
	case !present:
		return nil, &denial{status: http.StatusUnauthorized, code: "invalid_token", desc: descMissing, wwwAuth: wwwMissing, path: p}
	case !ok:
		return nil, &denial{status: http.StatusUnauthorized, code: "invalid_token", desc: descMalformed, wwwAuth: wwwMalformed, path: p}
	}
	c, err := g.verifier.Verify(ctx, token)
	if err != nil || c == nil {
		return nil, &denial{status: http.StatusUnauthorized, code: "invalid_token", desc: descInvalid, wwwAuth: wwwInvalid, path: p, err: err}
	}
	if c.Unrestricted {
		return pass(r, p, c), nil
	}
	if e == nil {
		return nil, &denial{status: http.StatusForbidden, code: "insufficient_scope", desc: descNotInTable,
			wwwAuth: wwwNotInTable, required: []string{}, granted: c.Scopes, path: p, clientID: c.ClientID}
	}
	if missing, ok := scope.Covers(c.Scopes, e.route.Scopes); !ok {
		return nil, &denial{status: http.StatusForbidden, code: "insufficient_scope",
			desc:    "the token's scopes do not cover this route: it requires " + missing,
			wwwAuth: e.wwwAuthenticate, required: e.route.Scopes, granted: c.Scopes, path: p, clientID: c.ClientID}
	}
	return pass(r, p, c), nil
}

// pass returns r carrying claims c (when not nil) and path p.
func pass(r *http.Request, p string, c *verify.Claims) *http.Request {
	if c != nil {
		r = r.WithContext(WithClaims(r.Context(), c))
	}
	if p != r.URL.Path {
		if c == nil {
			r = r.WithContext(r.Context()) // a shallow copy we may change
		}
		u := *r.URL
		r.URL = &u
		r.URL.Path = p
		r.URL.RawPath = ""
	}
	return r
}

// bearer extracts the token of an "Authorization: Bearer <token>" header
// (RFC 6750 §2.1). present reports whether there is an Authorization
// header at all; ok whether it is well-formed.
func bearer(h http.Header) (token string, present, ok bool) {
	vals := h["Authorization"]
	switch len(vals) {
	case 0:
		return "", false, false
	case 1:
	default:
		return "", true, false
	}
	v := vals[0]
	const scheme = "Bearer "
	if len(v) < len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return "", true, false
	}
	t := strings.Trim(v[len(scheme):], " \t")
	if t == "" {
		return "", true, false
	}
	// b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
	i := 0
	for ; i < len(t); i++ {
		c := t[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' {
			continue
		}
		break
	}
	if i == 0 {
		return "", true, false
	}
	for ; i < len(t); i++ {
		if t[i] != '=' {
			return "", true, false
		}
	}
	return t, true, true
}

type errorBody struct {
	Error          string   `json:"error"`
	Description    string   `json:"error_description,omitempty"`
	RequiredScopes []string `json:"required_scopes,omitempty"`
	GrantedScopes  []string `json:"granted_scopes,omitempty"`
}

type scopeErrorBody struct {
	Error          string   `json:"error"`
	Description    string   `json:"error_description"`
	RequiredScopes []string `json:"required_scopes"`
	GrantedScopes  []string `json:"granted_scopes"`
}

// deny writes the response for d and logs it (without the token).
func (g *Guard) deny(w http.ResponseWriter, r *http.Request, d *denial) {
	level := slog.LevelDebug
	if d.status == http.StatusForbidden {
		level = slog.LevelInfo
	}
	if g.logger.Enabled(r.Context(), level) {
		attrs := []slog.Attr{
			slog.String("method", r.Method),
			slog.String("path", d.path),
			slog.Int("status", d.status),
			slog.String("error", d.code),
		}
		if d.clientID != "" {
			attrs = append(attrs, slog.String("client_id", d.clientID))
		}
		if d.required != nil {
			attrs = append(attrs, slog.Any("required_scopes", d.required))
		}
		if d.err != nil {
			attrs = append(attrs, slog.String("err", d.err.Error()))
		}
		g.logger.LogAttrs(r.Context(), level, "guard refused request", attrs...)
	}

	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if d.wwwAuth != "" {
		h.Set("WWW-Authenticate", d.wwwAuth)
	}
	w.WriteHeader(d.status)
	var body any
	if d.status == http.StatusForbidden {
		granted := d.granted
		if granted == nil {
			granted = []string{}
		}
		body = scopeErrorBody{Error: d.code, Description: d.desc, RequiredScopes: d.required, GrantedScopes: granted}
	} else {
		body = errorBody{Error: d.code, Description: d.desc}
	}
	_ = json.NewEncoder(w).Encode(body)
}
