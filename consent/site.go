package consent

import (
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"oauthd/data"
)

// What the pages of other packages on the same site (consent/settings)
// share with the login and consent pages: the session, the CSRF check,
// the page frame (layout.html and the stylesheet), the security headers
// and the error pages. Each rule stays here, in one place; the other
// packages call it through these.

// CSRFField is the form field that carries the session's CSRF token.
const CSRFField = csrfField

// A Page is the template of a page that another package serves on this
// site: layout.html with that package's templates. Make it with [NewPage]
// and write it with [Handler.Render].
type Page struct {
	name string
	t    *template.Template
}

// NewPage parses files (patterns of fsys) into a copy of the layout, with
// its template functions; the files define "content" and what it uses.
// name is the page's name in the logs.
func NewPage(name string, fsys fs.FS, files ...string) (*Page, error) {
	base, err := parseLayout()
	if err != nil {
		return nil, err
	}
	t, err := parsePage(base, fsys, files...)
	if err != nil {
		return nil, fmt.Errorf("consent: parse %s: %w", name, err)
	}
	return &Page{name: name, t: t}, nil
}

// parseLayout parses templates/layout.html with the pages' functions.
func parseLayout() (*template.Template, error) {
	base, err := template.New("layout.html").Funcs(template.FuncMap{"initial": initial, "maxTypedUserCode": func() int { return data.MaxTypedUserCode }}).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("consent: parse layout: %w", err)
	}
	return base, nil
}

// parsePage parses files of fsys into a copy of base (the layout).
func parsePage(base *template.Template, fsys fs.FS, files ...string) (*template.Template, error) {
	t, err := base.Clone()
	if err != nil {
		return nil, fmt.Errorf("clone layout: %w", err)
	}
	return t.ParseFS(fsys, files...)
}

// ScopeGroup is the scopes of one level (your account, your teams, your
// organization) under the heading the consent page gives it.
type ScopeGroup = scopeGroup

// ScopeGroups groups scope names as the consent page shows them: by level,
// in the catalogue's order, each with its plain description. The
// Connected apps page shows a grant's permissions in the same words.
func ScopeGroups(names []string) []ScopeGroup { return groupScopes(names) }

// CSSURL is the stylesheet's URL (with its content hash) that layout.html
// links: a view's CSSURL.
func (h *Handler) CSSURL() string { return h.cssURL }

// Render writes page p with v and the pages' security headers (the base
// CSP, no-store, no framing, no referrer). v is what p's templates read;
// layout.html reads its Title, CSSURL ([Handler.CSSURL]) and Wide. A
// template error is logged and answered with a plain 500.
func (h *Handler) Render(c echo.Context, status int, p *Page, v any) error {
	return h.write(c, status, p.name, p.t, v, baseCSP)
}

// write executes t's layout with v and writes it with status and the
// security headers (csp the Content-Security-Policy).
func (h *Handler) write(c echo.Context, status int, page string, t *template.Template, v any, csp string) error {
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout.html", v); err != nil {
		h.log.ErrorContext(c.Request().Context(), "render page", slog.String("page", page), slog.Any("err", err))
		setPageHeaders(c.Response(), baseCSP)
		return c.String(http.StatusInternalServerError, "internal error")
	}
	setPageHeaders(c.Response(), csp)
	return c.HTML(status, shownText(b.String()))
}

// shownText is a rendered page with every character [data.UnsafeRune]
// names above ASCII (C1 controls, bidi embeddings, overrides and isolates)
// written as a visible \uXXXX. html/template escapes markup, not these: a
// name stored before names were checked ("Pay\u202egnikooB", which reads
// "PayBooking") would otherwise show on the consent or Connected apps
// page as another name. The templates hold none of them, and the escape
// is plain ASCII, so it is as safe in an attribute as in text. A hidden
// input is left as it is: its value (an authorization request's state,
// say) is not shown, and goes back to the server unchanged.
func shownText(page string) string {
	unsafe := func(r rune) bool { return r >= 0x80 && data.UnsafeRune(r) != "" }
	i := strings.IndexFunc(page, unsafe)
	if i < 0 {
		return page
	}
	var b strings.Builder
	b.WriteString(page[:i])
	for j, r := range page[i:] {
		if unsafe(r) && !inHiddenInput(page[:i+j]) {
			fmt.Fprintf(&b, "\\u%04X", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// inHiddenInput reports whether the end of before is inside an
// <input type="hidden"> tag. html/template writes < and > in text and
// attribute values as entities, so the last < or > is the tag's.
func inHiddenInput(before string) bool {
	lt := strings.LastIndexByte(before, '<')
	return lt > strings.LastIndexByte(before, '>') && strings.HasPrefix(before[lt:], `<input type="hidden"`)
}

// ErrorPage renders the error page with status, title and message.
func (h *Handler) ErrorPage(c echo.Context, status int, title, message string) error {
	return h.errorPage(c, status, title, message)
}

// InternalError logs err (op says what failed) and renders the generic
// 500 page.
func (h *Handler) InternalError(c echo.Context, op string, err error) error {
	return h.internalError(c, op, err)
}

// SeeOther redirects with 303 and the pages' headers (no-store,
// no-referrer).
func SeeOther(c echo.Context, to string) error { return seeOther(c, to) }

// SignedIn returns the request's live session (oauthd_session) and its
// user. When there is none it answers itself, with a 303 to the login
// page, which returns to returnTo after the login (when safeReturnTo
// accepts it: a path under /settings/), or with the 500 page when the
// store fails; then ok is false and err is what the handler returns.
func (h *Handler) SignedIn(c echo.Context, returnTo string) (s data.Session, u data.User, ok bool, err error) {
	s, u, err = h.session(c.Request().Context(), c.Request())
	if errors.Is(err, errNoSession) {
		return s, u, false, seeOther(c, loginURL(safeReturnTo(returnTo)))
	}
	if err != nil {
		return s, u, false, h.internalError(c, "session", err)
	}
	return s, u, true, nil
}

// ValidPost reports whether the POST's parsed form carries session s's
// CSRF token (compared in constant time) and its Origin header, if any,
// is the site's own ([Config.AppURL]).
func (h *Handler) ValidPost(r *http.Request, s data.Session) bool {
	return h.sameOrigin(r) && equalToken(s.CSRF, r.PostForm.Get(csrfField))
}
