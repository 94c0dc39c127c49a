package consent

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/data/ident"
	"oauthd/data/scope"
	"oauthd/issuer"
)

// authorizeParams are the authorization request parameters (RFC 6749 §4.1.1,
// RFC 7636 §4.3) that the consent form carries back; nothing else from the
// form reaches the Authorizer.
var authorizeParams = []string{
	"client_id", "redirect_uri", "state", "scope",
	"code_challenge", "code_challenge_method", "response_type",
	"request_uri", // a pushed request's consent continuation (RFC 9126)
	"resource",    // RFC 8707, repeatable
	// OpenID Connect (Core §3.1.2.1)
	"nonce", "prompt", "max_age", "login_hint", "id_token_hint", "response_mode",
}

// scopeGroup is the scopes of one level, for display.
type scopeGroup struct {
	Heading string
	Scopes  []scope.Scope
}

var levelHeadings = []struct {
	level   scope.Level
	heading string
}{
	{scope.Identity, "Who you are"},
	{scope.User, "Your account"},
	{scope.Team, "Your teams"},
	{scope.Organization, "Your organization"},
}

// groupScopes groups the requested scopes by level, in the catalogue's
// order. Unknown names (the issuer refuses them) are skipped.
func groupScopes(names []string) []scopeGroup {
	var groups []scopeGroup
	for _, lh := range levelHeadings {
		g := scopeGroup{Heading: lh.heading}
		for _, s := range scope.All() {
			if s.Level == lh.level && slices.Contains(names, s.Name) {
				g.Scopes = append(g.Scopes, s)
			}
		}
		if len(g.Scopes) > 0 {
			groups = append(groups, g)
		}
	}
	return groups
}

// hiddenFields returns the authorization parameters of q, in a fixed order.
func hiddenFields(q url.Values) []hiddenField {
	var out []hiddenField
	for _, k := range authorizeParams {
		for _, v := range q[k] {
			out = append(out, hiddenField{k, v})
		}
	}
	return out
}

var (
	schemeRE = regexp.MustCompile(`^[a-z][a-z0-9+.\-]*$`)
	hostRE   = regexp.MustCompile(`^[a-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9a-f:.]+\](:[0-9]{1,5})?$`)
)

// redirectOrigin returns the origin to show and to allow in the CSP's
// form-action for a redirect URI: scheme://host for http(s), "scheme:" for a
// native app's private-use scheme. It returns "" for anything that is not
// clean enough to put in a header.
func redirectOrigin(redirectURI string) string {
	u, err := url.Parse(redirectURI)
	if err != nil {
		return ""
	}
	sch := strings.ToLower(u.Scheme)
	if !schemeRE.MatchString(sch) {
		return ""
	}
	if sch != "http" && sch != "https" {
		return sch + ":"
	}
	host := strings.ToLower(u.Host)
	if !hostRE.MatchString(host) {
		return ""
	}
	return sch + "://" + host
}

// showConsent serves GET /auth/oauth2/authorize: the request is validated
// first (so client and redirect errors show even before login), then the
// login page if there is no session, then the consent page.
func (h *Handler) showConsent(c echo.Context) error {
	return h.authorizeRequest(c, c.Request().URL.Query())
}

// authorizeRequest answers the authorization request q, sent by GET or,
// as OpenID Connect Core §3.1.2.1 requires too, by POST (a form without
// the consent page's CSRF token and decision).
func (h *Handler) authorizeRequest(c echo.Context, q url.Values) error {
	r := c.Request()
	ctx := r.Context()
	s, user, err := h.session(ctx, r)
	if errors.Is(err, errNoSession) {
		// Validate first so client and redirect errors show before login,
		// but count the request only once, when the consent page is shown.
		ar, err := h.authz.CheckAuthorize(ctx, q)
		if err != nil {
			return h.authorizeError(c, err)
		}
		if _, err := h.authz.Interact(ctx, ar, nil); err != nil {
			return h.authorizeError(c, err) // prompt=none: login_required
		}
		return h.toLogin(c, ar)
	}
	if err != nil {
		return h.internalError(c, "consent page", err)
	}
	ar, err := h.authz.ParseAuthorize(ctx, q)
	if err != nil {
		return h.authorizeError(c, err)
	}
	login := &issuer.Login{UserID: s.UserID, AuthTime: s.Authenticated()}
	step, err := h.authz.Interact(ctx, ar, login)
	switch {
	case err != nil:
		return h.authorizeError(c, err)
	case step == issuer.StepLogin:
		return h.toLogin(c, ar)
	case step == issuer.StepApprove:
		// prompt=none with a remembered consent: no page (OpenID Connect
		// Core §3.1.2.1).
		orig := ar.Query
		if orig == nil {
			orig = q
		}
		to, err := h.authz.ApproveLogin(ctx, orig, *login)
		if err != nil {
			return h.authorizeError(c, err)
		}
		h.log.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("event", "consent_remembered"),
			slog.Int64("user_id", s.UserID), slog.String("client_id", ar.Client.ID), slog.String("remote_addr", c.RealIP()))
		return seeOther(c, to)
	}
	orig := ar.Query
	if orig == nil {
		orig = q
	}
	origin := redirectOrigin(ar.RedirectURI)
	v := view{
		Title:        "Authorize " + ar.Client.Name,
		User:         user,
		ClientName:   ar.Client.Name,
		ClientOwner:  h.ownerName(ctx, ar.Client),
		VouchedBy:    ar.Client.MetadataHost,
		Resources:    ar.Resources,
		Groups:       groupScopes(ar.Scopes),
		Unrestricted: ar.Unrestricted,
		RedirectTo:   origin,
		Hidden:       hiddenFields(orig),
		CSRF:         s.CSRF,
		ReturnTo:     safeReturnTo(authorizePath + "?" + returnQuery(ar, q)),
	}
	if origin == "" {
		v.RedirectTo = ar.RedirectURI
	}
	if v.VouchedBy != "" {
		v.Title = "Authorize an AI assistant from " + v.VouchedBy
	}
	return h.render(c, http.StatusOK, pageConsent, v, origin)
}

// decide serves POST /auth/oauth2/authorize: the user's Allow or Deny. It
// needs the session and its CSRF token; the hidden fields rebuild the
// query, which the Authorizer validates again from scratch.
func (h *Handler) decide(c echo.Context) error {
	r := c.Request()
	ctx := r.Context()
	if err := r.ParseForm(); err != nil {
		return h.errorPage(c, http.StatusBadRequest, "Bad request", "The form could not be read.")
	}
	if !r.PostForm.Has(csrfField) && !r.PostForm.Has("action") {
		// Not the consent form: an authorization request sent by POST.
		return h.authorizeRequest(c, r.PostForm)
	}
	q := url.Values{}
	for _, k := range authorizeParams {
		if vs, ok := r.PostForm[k]; ok {
			q[k] = slices.Clone(vs)
		}
	}
	s, _, err := h.session(ctx, r)
	if errors.Is(err, errNoSession) {
		return seeOther(c, loginURL(safeReturnTo(authorizePath+"?"+q.Encode())))
	}
	if err != nil {
		return h.internalError(c, "consent decision", err)
	}
	if !h.sameOrigin(r) || !equalToken(s.CSRF, r.PostForm.Get(csrfField)) {
		h.log.LogAttrs(ctx, slog.LevelWarn, "audit", slog.String("event", "consent_csrf_failed"),
			slog.Int64("user_id", s.UserID), slog.String("client_id", q.Get("client_id")),
			slog.String("remote_addr", c.RealIP()))
		return h.errorPage(c, http.StatusForbidden, "Request refused",
			"This authorization did not come from this site's consent page, so nothing was granted. "+
				"Go back to the application and start again.")
	}
	var (
		to    string
		event string
	)
	switch r.PostForm.Get("action") {
	case "allow":
		event = "consent_given"
		to, err = h.authz.ApproveLogin(ctx, q, issuer.Login{UserID: s.UserID, AuthTime: s.Authenticated()})
	case "deny":
		event = "consent_denied"
		to, err = h.authz.Deny(ctx, q, s.UserID)
	default:
		return h.errorPage(c, http.StatusBadRequest, "Bad request", "Choose Allow or Deny.")
	}
	attrs := []slog.Attr{slog.String("event", event),
		slog.Int64("user_id", s.UserID), slog.String("client_id", q.Get("client_id")),
		slog.String("remote_addr", c.RealIP())}
	if err != nil {
		// The request no longer validates (e.g. the client was rejected
		// meanwhile): nothing was granted.
		attrs[0] = slog.String("event", "consent_failed")
		var re *issuer.RedirectError
		if errors.As(err, &re) && re.Err != nil {
			attrs = append(attrs, slog.String("error", re.Err.Code))
		}
		h.log.LogAttrs(ctx, slog.LevelInfo, "audit", attrs...)
		return h.authorizeError(c, err)
	}
	h.log.LogAttrs(ctx, slog.LevelInfo, "audit", attrs...)
	return seeOther(c, to)
}

// toLogin sends the browser to the login page, which comes back to the
// request without what the login fulfils (prompt=login, max_age;
// [issuer.Server.AfterLogin]), its login_hint prefilling the form.
func (h *Handler) toLogin(c echo.Context, ar *issuer.AuthorizeRequest) error {
	to := loginURL(safeReturnTo(authorizePath + "?" + h.authz.AfterLogin(ar).Encode()))
	if ar.LoginHint != "" {
		sep := "?"
		if strings.Contains(to, "?") {
			sep = "&"
		}
		to += sep + "login_hint=" + url.QueryEscape(ar.LoginHint)
	}
	return seeOther(c, to)
}

// returnQuery is the query of the authorization request to come back to:
// q, or for a pushed request the continuation ar carries.
func returnQuery(ar *issuer.AuthorizeRequest, q url.Values) string {
	if ar != nil && ar.Query != nil && ar.Query.Has("request_uri") {
		return ar.Query.Encode()
	}
	return q.Encode()
}

// ownerName is what the consent page shows as the client's developer: the
// owner's current email, or, for an unclaimed client, the owner it was
// imported with; "" when it cannot be read (the page then leaves it out).
func (h *Handler) ownerName(ctx context.Context, c data.Client) string {
	if c.OwnerID == 0 {
		return ident.Shown(c.UnclaimedOwner)
	}
	u, err := h.store.GetUser(ctx, c.OwnerID)
	if err != nil {
		return ""
	}
	return ident.Shown(u.Email)
}
