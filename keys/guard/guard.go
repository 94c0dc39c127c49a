package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"oauthd/data/oauth"
	"oauthd/data/scope"
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
	// DPoP checks the proofs of DPoP-bound tokens (RFC 9449 §7). Default:
	// verify.NewDPoP with its in-memory replay cache (one process).
	DPoP *verify.DPoP
	// PublicURL is the scheme and authority clients call this server at
	// (e.g. "https://api.example.com"), which a DPoP proof's htu names.
	// Default: derived from each request (https when it came over TLS,
	// else http, and its Host header); set it behind a proxy that
	// terminates TLS or rewrites Host. X-Forwarded-* headers are never
	// trusted.
	PublicURL string
	// MetadataURL, when set, returns the URL of the RFC 9728 protected
	// resource metadata for a request path ("" for none): every 401 and
	// 403 challenge then carries resource_metadata="…", and a 401 on a
	// route that needs scopes carries scope="…" with them (RFC 9728 §5.1,
	// RFC 6750 §3; the MCP authorization profile's discovery and scope
	// selection). Default nil: the challenges of RFC 6750 alone.
	MetadataURL func(path string) string
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
	verifier  Verifier
	table     *Table
	logger    *slog.Logger
	dpop      *verify.DPoP
	publicURL string
	metaURL   func(path string) string // Config.MetadataURL

	revokedMu sync.Mutex
	revoked   map[string]struct{} // grants whose refusal was logged (revokedSeen)
}

// New returns a Guard. It panics when cfg.Verifier is nil: a guard that
// cannot verify tokens is a wiring defect, not a runtime condition.
func New(cfg Config) *Guard {
	if cfg.Verifier == nil {
		panic("guard.New: Config.Verifier is nil")
	}
	g := &Guard{verifier: cfg.Verifier, table: cfg.Table, logger: cfg.Logger, dpop: cfg.DPoP,
		publicURL: strings.TrimRight(cfg.PublicURL, "/"), metaURL: cfg.MetadataURL, revoked: map[string]struct{}{}}
	if g.dpop == nil {
		g.dpop = verify.NewDPoP(verify.DPoPConfig{})
	}
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
	// scopes are the scopes of the route refused, for a 401's challenge
	// (MetadataURL); nil for a route without them.
	scopes   []string
	clientID string
	err      error // why verification failed, for the log only
}

const (
	descMissing    = "missing bearer token"
	descMalformed  = "malformed Authorization header: expected Bearer <token>"
	descInvalid    = "the access token is invalid, expired or not signed by the issuer"
	descRevoked    = "grant revoked: the access token's grant was revoked; the user must authorize the application again"
	descNotInTable = "this route is not available to third-party tokens"
	descBadPath    = "the request path is not canonical (empty, '.' or '..' segments, or an encoded slash)"

	// wwwMissing is the challenge of a request without any credentials:
	// no error code nor other error information (RFC 6750 §3.1).
	wwwMissing    = `Bearer`
	wwwMalformed  = `Bearer error="` + oauth.InvalidToken + `", error_description="malformed Authorization header"`
	wwwInvalid    = `Bearer error="` + oauth.InvalidToken + `", error_description="` + descInvalid + `"`
	wwwRevoked    = `Bearer error="` + oauth.InvalidToken + `", error_description="` + descRevoked + `"`
	wwwNotInTable = `Bearer error="` + oauth.InsufficientScope + `", error_description="` + descNotInTable + `"`

	descBoundAsBearer = "the access token is DPoP-bound: send it with Authorization: DPoP and a DPoP proof"
	descNotBound      = "the access token is not DPoP-bound: send it with Authorization: Bearer"
	descProofCount    = "a DPoP-bound token needs exactly one DPoP header"

	dpopAlgs         = `algs="` + verify.DPoPChallengeAlgs + `"`
	wwwDPoPInvalid   = `DPoP error="` + oauth.InvalidToken + `", error_description="` + descInvalid + `", ` + dpopAlgs
	wwwDPoPRevoked   = `DPoP error="` + oauth.InvalidToken + `", error_description="` + descRevoked + `", ` + dpopAlgs
	wwwBoundAsBearer = `DPoP error="` + oauth.InvalidToken + `", error_description="` + descBoundAsBearer + `", ` + dpopAlgs
	wwwNotBound      = `Bearer error="` + oauth.InvalidToken + `", error_description="` + descNotBound + `"`
	wwwBadProof      = `DPoP error="` + oauth.InvalidDPoPProof + `", error_description="the DPoP proof is invalid", ` + dpopAlgs
)

// check decides on r. It returns the request to pass on (with the claims
// and the canonical path), or the reason to refuse it.
func (g *Guard) check(r *http.Request) (*http.Request, *denial) {
	p, err := CanonicalPath(r.URL)
	if err != nil {
		return nil, &denial{status: http.StatusBadRequest, code: oauth.InvalidRequest, desc: descBadPath, path: r.URL.Path}
	}
	e := g.table.match(r.Method, p)
	r2, d := g.decide(r, p, e)
	if d != nil && e != nil && !e.route.Public && g.metaURL != nil {
		d.scopes = e.route.Scopes
	}
	return r2, d
}

// decide is check without the challenge's scopes, on the canonical path
// p and its route e (nil: not in the table).
func (g *Guard) decide(r *http.Request, p string, e *entry) (*http.Request, *denial) {
	token, isDPoP, present, ok := credentials(r.Header)
	ctx := r.Context()

	if e != nil && e.route.Public {
		if present && ok {
			if c, err := g.verifier.Verify(ctx, token); err == nil && c != nil && g.bound(r, token, isDPoP, c, p) == nil {
				return pass(r, p, c), nil
			}
		}
		return pass(r, p, nil), nil
	}

	switch {
	case !present:
		// No credentials at all: a bare challenge (RFC 6750 §3.1).
		return nil, &denial{status: http.StatusUnauthorized, desc: descMissing, wwwAuth: wwwMissing, path: p}
	case !ok:
		return nil, &denial{status: http.StatusUnauthorized, code: oauth.InvalidToken, desc: descMalformed, wwwAuth: wwwMalformed, path: p}
	}
	c, err := g.verifier.Verify(ctx, token)
	if ge, ok := errors.AsType[*verify.GrantError](err); ok && errors.Is(err, verify.ErrGrantRevoked) {
		g.revokedSeen(ctx, ge.GrantID)
		www := wwwRevoked
		if isDPoP {
			www = wwwDPoPRevoked
		}
		return nil, &denial{status: http.StatusUnauthorized, code: oauth.InvalidToken, desc: descRevoked, wwwAuth: www, path: p, err: err}
	}
	if err != nil || c == nil {
		www := wwwInvalid
		if isDPoP {
			www = wwwDPoPInvalid
		}
		return nil, &denial{status: http.StatusUnauthorized, code: oauth.InvalidToken, desc: descInvalid, wwwAuth: www, path: p, err: err}
	}
	if d := g.bound(r, token, isDPoP, c, p); d != nil {
		return nil, d
	}
	if c.Unrestricted {
		return pass(r, p, c), nil
	}
	if e == nil {
		return nil, &denial{status: http.StatusForbidden, code: oauth.InsufficientScope, desc: descNotInTable,
			wwwAuth: wwwNotInTable, required: []string{}, granted: c.Scopes, path: p, clientID: c.ClientID}
	}
	if missing, ok := scope.Covers(c.Scopes, e.route.Scopes); !ok {
		return nil, &denial{status: http.StatusForbidden, code: oauth.InsufficientScope,
			desc:    "the token's scopes do not cover this route: it requires " + missing,
			wwwAuth: e.wwwAuthenticate, required: e.route.Scopes, granted: c.Scopes, path: p, clientID: c.ClientID}
	}
	return pass(r, p, c), nil
}

// bound applies RFC 9449 §7 to a verified token: a DPoP-bound token (one
// with cnf.jkt) needs the DPoP scheme and a valid proof by its key for
// this request, with ath; a bearer token sent with the DPoP scheme is
// refused too (the client believes it bound, something is wrong). The
// proof is checked on every request (its jti is single-use), whatever
// cached the token's verification.
func (g *Guard) bound(r *http.Request, token string, isDPoP bool, c *verify.Claims, p string) *denial {
	switch {
	case !isDPoP && c.JKT == "":
		return nil
	case !isDPoP:
		return &denial{status: http.StatusUnauthorized, code: oauth.InvalidToken, desc: descBoundAsBearer,
			wwwAuth: wwwBoundAsBearer, path: p, clientID: c.ClientID}
	case c.JKT == "":
		return &denial{status: http.StatusUnauthorized, code: oauth.InvalidToken, desc: descNotBound,
			wwwAuth: wwwNotBound, path: p, clientID: c.ClientID}
	}
	proofs := r.Header.Values("DPoP")
	if len(proofs) != 1 {
		return &denial{status: http.StatusUnauthorized, code: oauth.InvalidDPoPProof, desc: descProofCount,
			wwwAuth: wwwBadProof, path: p, clientID: c.ClientID}
	}
	jkt, err := g.dpop.Check(r.Context(), proofs[0], r.Method, g.htu(r), token)
	if err == nil && jkt != c.JKT {
		err = fmt.Errorf("%w: signed by another key than the token is bound to", verify.ErrInvalidProof)
	}
	if err != nil {
		if !errors.Is(err, verify.ErrInvalidProof) {
			return &denial{status: http.StatusServiceUnavailable, code: oauth.TemporarilyUnavailable,
				desc: "the DPoP proof could not be checked; try again", path: p, clientID: c.ClientID, err: err}
		}
		return &denial{status: http.StatusUnauthorized, code: oauth.InvalidDPoPProof,
			desc:    "the DPoP proof is invalid: " + strings.TrimPrefix(err.Error(), verify.ErrInvalidProof.Error()+": "),
			wwwAuth: wwwBadProof, path: p, clientID: c.ClientID, err: err}
	}
	return nil
}

// htu is the URL the client called, as its proof's htu must name it.
func (g *Guard) htu(r *http.Request) string {
	base := g.publicURL
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	return base + r.URL.EscapedPath()
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

// credentials extracts the token of an "Authorization: Bearer <token>"
// (RFC 6750 §2.1) or "Authorization: DPoP <token>" (RFC 9449 §7.1)
// header. present reports whether there is an Authorization header at
// all; ok whether it is well-formed; isDPoP which scheme it uses.
func credentials(h http.Header) (token string, isDPoP, present, ok bool) {
	vals := h["Authorization"]
	switch len(vals) {
	case 0:
		return "", false, false, false
	case 1:
	default:
		return "", false, true, false
	}
	v := vals[0]
	var rest string
	switch {
	case len(v) >= len("Bearer ") && strings.EqualFold(v[:len("Bearer ")], "Bearer "):
		rest = v[len("Bearer "):]
	case len(v) >= len("DPoP ") && strings.EqualFold(v[:len("DPoP ")], "DPoP "):
		rest, isDPoP = v[len("DPoP "):], true
	default:
		return "", false, true, false
	}
	t, ok := b64token(rest)
	return t, isDPoP, true, ok
}

// b64token trims v and checks the RFC 6750 §2.1 b64token syntax.
func b64token(v string) (string, bool) {
	t := strings.Trim(v, " \t")
	if t == "" {
		return "", false
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
		return "", false
	}
	for ; i < len(t); i++ {
		if t[i] != '=' {
			return "", false
		}
	}
	return t, true
}

// retryAfterUnavailable is the Retry-After of a 503 (the DPoP replay
// store did not answer), in seconds.
const retryAfterUnavailable = "2"

// maxRevokedSeen bounds the grants whose refusal was logged; past it the
// set starts over (a grant may then be logged once more).
const maxRevokedSeen = 8192

// revokedSeen logs the first refusal of a token of revoked grant id (at
// info), not every request that presents one.
func (g *Guard) revokedSeen(ctx context.Context, id string) {
	g.revokedMu.Lock()
	_, seen := g.revoked[id]
	if !seen {
		if len(g.revoked) >= maxRevokedSeen {
			clear(g.revoked)
		}
		g.revoked[id] = struct{}{}
	}
	g.revokedMu.Unlock()
	if !seen {
		g.logger.LogAttrs(ctx, slog.LevelInfo, "refusing the tokens of a revoked grant", slog.String("grant_id", id))
	}
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
	h.Set("Cache-Control", "no-store")
	if d.wwwAuth != "" {
		www := d.wwwAuth
		if g.metaURL != nil {
			var scopes []string
			if d.status == http.StatusUnauthorized {
				scopes = d.scopes
			}
			www = verify.ResourceChallenge(www, g.metaURL(d.path), scopes)
		}
		h.Set("WWW-Authenticate", www)
	}
	if d.status == http.StatusServiceUnavailable {
		h.Set("Retry-After", retryAfterUnavailable)
	}
	if d.code == "" {
		// No error information at all (RFC 6750 §3.1): no body.
		w.WriteHeader(d.status)
		return
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(d.status)
	var body any
	if d.status == http.StatusForbidden {
		granted := d.granted
		if granted == nil {
			granted = []string{}
		}
		body = oauth.ScopeErrorBody{Error: d.code, Description: d.desc, RequiredScopes: d.required, GrantedScopes: granted}
	} else {
		body = oauth.ErrorBody{Error: d.code, Description: d.desc}
	}
	_ = json.NewEncoder(w).Encode(body)
}
