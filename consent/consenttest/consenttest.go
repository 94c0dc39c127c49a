package consenttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/oauth2"
)

// maxSteps bounds the pages one [Browser.Authorize] goes through; the flow
// needs at most four (authorize, login, authorize, consent).
const maxSteps = 10

// maxPageBytes bounds a page read by the browser.
const maxPageBytes = 1 << 20

// ErrUnexpectedPage is wrapped by the errors of [Browser.Authorize] when a
// page is neither the login page, the consent page nor a redirect to the
// client; errors.As gives the [*PageError] with the page.
var ErrUnexpectedPage = errors.New("consenttest: unexpected page")

// PageError is a page at which [Browser.Authorize] had to stop: an error
// page (e.g. the 400 page of an unknown client), the login page again after
// a wrong password, or any other page that is not part of the flow.
type PageError struct {
	URL        *url.URL // the page's URL
	StatusCode int
	Title      string // text of the page's first <h1>
	Message    string // text of the page's role="alert" element, or of p.lead
	Body       string // the HTML
}

func (e *PageError) Error() string {
	msg := e.Title
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return fmt.Sprintf("%s: %s answered %d (%s)", ErrUnexpectedPage, e.URL.Redacted(), e.StatusCode, msg)
}

func (e *PageError) Unwrap() error { return ErrUnexpectedPage }

// Browser is a cookie-keeping HTTP client that walks through the login and
// consent pages. Its zero value is not usable: create it with [New]. A
// Browser keeps its session between calls (a second Authorize skips the
// login page), and is safe for concurrent use by several goroutines, like
// the tabs of one browser.
type Browser struct {
	// Client has a cookie jar and a CheckRedirect that follows redirects on
	// the authorization server and stops at any redirect leaving it (in
	// particular, to the client's redirect URI).
	Client *http.Client
}

type stopKey struct{}

// stopAt is what CheckRedirect needs to know about the request in flight.
type stopAt struct {
	origin   string // scheme://host of the authorization server
	redirect string // the client's redirect URI without query
}

// New returns a Browser with an empty cookie jar and a 30 s timeout per
// request.
func New() *Browser {
	jar, _ := cookiejar.New(nil) // never fails with nil options
	b := &Browser{}
	b.Client = &http.Client{
		Jar:           jar,
		Timeout:       30 * time.Second,
		CheckRedirect: checkRedirect,
	}
	return b
}

// checkRedirect follows redirects within the authorization server's origin
// and returns the redirect itself (http.ErrUseLastResponse) when it leads
// to the client's redirect URI or anywhere else.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxSteps {
		return errors.New("consenttest: too many redirects")
	}
	s, ok := req.Context().Value(stopKey{}).(stopAt)
	if !ok {
		return http.ErrUseLastResponse
	}
	if s.redirect != "" && withoutQuery(req.URL) == s.redirect {
		return http.ErrUseLastResponse
	}
	if origin(req.URL) != s.origin {
		return http.ErrUseLastResponse
	}
	return nil
}

func origin(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

func withoutQuery(u *url.URL) string {
	c := *u
	c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = "", false, "", ""
	c.Scheme, c.Host = strings.ToLower(c.Scheme), strings.ToLower(c.Host)
	return c.String()
}

// Authorize opens authorizeURL (the authorization endpoint with its query,
// e.g. from [oauth2.Config.AuthCodeURL]), signs in with login and password
// when the server shows its login page, chooses Allow (allow true) or Deny
// on the consent page and returns the URL the server redirected to: the
// client's redirect URI with code, state and iss, or with error. A redirect
// to the client before any page (an error after the client was validated)
// is returned the same way.
//
// Any other outcome is an error: a *[PageError] (errors.As) for an error
// page or a refused login, or a transport error.
func (b *Browser) Authorize(ctx context.Context, authorizeURL, login, password string, allow bool) (*url.URL, error) {
	start, err := url.Parse(authorizeURL)
	if err != nil || start.Scheme == "" || start.Host == "" {
		return nil, fmt.Errorf("consenttest: authorize URL %q is not absolute", authorizeURL)
	}
	s := stopAt{origin: origin(start)}
	if ru := start.Query().Get("redirect_uri"); ru != "" {
		if u, err := url.Parse(ru); err == nil {
			s.redirect = withoutQuery(u)
		}
	}
	ctx = context.WithValue(ctx, stopKey{}, s)

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, start.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("consenttest: %w", err)
	}
	loggedIn, decided := false, false
	for range maxSteps {
		resp, body, err := b.do(req)
		if err != nil {
			return nil, err
		}
		page := resp.Request.URL
		if isRedirect(resp.StatusCode) {
			loc, err := page.Parse(resp.Header.Get("Location"))
			if err != nil {
				return nil, fmt.Errorf("consenttest: bad Location %q: %w", resp.Header.Get("Location"), err)
			}
			return loc, nil
		}
		doc, err := html.Parse(strings.NewReader(body))
		if err != nil || resp.StatusCode != http.StatusOK {
			return nil, pageError(resp, body, doc)
		}
		forms := parseForms(doc)
		switch {
		case !loggedIn && findForm(forms, page, "/auth/login") != nil:
			f := findForm(forms, page, "/auth/login")
			vals, ok := f.loginValues(login, password)
			if !ok {
				return nil, fmt.Errorf("consenttest: the login form at %s has no text and password inputs: %w", page.Redacted(), pageError(resp, body, doc))
			}
			loggedIn = true
			req, err = f.request(ctx, page, vals)
		case !decided && findForm(forms, page, "/auth/oauth2/authorize") != nil:
			f := findForm(forms, page, "/auth/oauth2/authorize")
			vals := f.hiddenValues()
			choice := "deny"
			if allow {
				choice = "allow"
			}
			btn, ok := f.button(choice)
			if !ok {
				return nil, fmt.Errorf("consenttest: the consent form at %s has no %s button: %w", page.Redacted(), choice, pageError(resp, body, doc))
			}
			if btn.name != "" {
				vals.Add(btn.name, btn.value)
			}
			decided = true
			req, err = f.request(ctx, page, vals)
		default:
			// E.g. the login page again after a wrong password (401 would
			// already have stopped above; this is a 200 that is not part of
			// the flow).
			return nil, pageError(resp, body, doc)
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("consenttest: no redirect to the client after %d pages", maxSteps)
}

func isRedirect(code int) bool { return code >= 300 && code < 400 }

// do sends req and reads the body.
func (b *Browser) do(req *http.Request) (*http.Response, string, error) {
	resp, err := b.Client.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("consenttest: %s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxPageBytes))
	if err != nil {
		return nil, "", fmt.Errorf("consenttest: read %s: %w", resp.Request.URL.Redacted(), err)
	}
	return resp, string(raw), nil
}

func pageError(resp *http.Response, body string, doc *html.Node) *PageError {
	e := &PageError{URL: resp.Request.URL, StatusCode: resp.StatusCode, Body: body}
	if doc != nil {
		if h := find(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == "h1" }); h != nil {
			e.Title = text(h)
		}
		alert := find(doc, func(n *html.Node) bool { return attr(n, "role") == "alert" })
		if alert == nil {
			alert = find(doc, func(n *html.Node) bool {
				return n.Type == html.ElementNode && n.Data == "p" && hasClass(n, "lead")
			})
		}
		if alert != nil {
			e.Message = text(alert)
		}
	}
	return e
}

// form is one <form> of a page.
type form struct {
	action, method string
	inputs         []field // every <input>, in document order
	buttons        []field // every submit <button> or <input type=submit>
}

type field struct {
	typ, name, value string
}

// parseForms returns the page's forms with their inputs and buttons.
func parseForms(doc *html.Node) []*form {
	var forms []*form
	var walk func(n *html.Node, cur *form)
	walk = func(n *html.Node, cur *form) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "form":
				cur = &form{action: attr(n, "action"), method: strings.ToUpper(attr(n, "method"))}
				if cur.method == "" {
					cur.method = http.MethodGet
				}
				forms = append(forms, cur)
			case "input":
				if cur != nil && !hasAttr(n, "disabled") {
					f := field{typ: strings.ToLower(attr(n, "type")), name: attr(n, "name"), value: attr(n, "value")}
					if f.typ == "" {
						f.typ = "text"
					}
					if f.typ == "submit" {
						cur.buttons = append(cur.buttons, f)
					} else {
						cur.inputs = append(cur.inputs, f)
					}
				}
			case "button":
				if cur != nil && !hasAttr(n, "disabled") {
					typ := strings.ToLower(attr(n, "type"))
					if typ == "" || typ == "submit" {
						cur.buttons = append(cur.buttons, field{typ: "submit", name: attr(n, "name"), value: attr(n, "value")})
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, cur)
		}
	}
	walk(doc, nil)
	return forms
}

// findForm returns the first POST form whose action resolves to path on
// the page's origin.
func findForm(forms []*form, page *url.URL, path string) *form {
	for _, f := range forms {
		if f.method != http.MethodPost {
			continue
		}
		u, err := page.Parse(f.action)
		if err == nil && origin(u) == origin(page) && u.Path == path {
			return f
		}
	}
	return nil
}

// hiddenValues are the form's hidden inputs.
func (f *form) hiddenValues() url.Values {
	v := url.Values{}
	for _, in := range f.inputs {
		if in.typ == "hidden" && in.name != "" {
			v.Add(in.name, in.value)
		}
	}
	return v
}

// loginValues fills the form's first text or email input with login and
// its password input with password, beside the hidden inputs.
func (f *form) loginValues(login, password string) (url.Values, bool) {
	v := f.hiddenValues()
	var user, pass bool
	for _, in := range f.inputs {
		switch {
		case !user && (in.typ == "text" || in.typ == "email") && in.name != "":
			v.Set(in.name, login)
			user = true
		case !pass && in.typ == "password" && in.name != "":
			v.Set(in.name, password)
			pass = true
		}
	}
	return v, user && pass
}

// button returns the submit button whose value is choice (case-insensitive).
func (f *form) button(choice string) (field, bool) {
	for _, b := range f.buttons {
		if strings.EqualFold(b.value, choice) {
			return b, true
		}
	}
	return field{}, false
}

// request builds the POST a browser sends for the form, with the Origin
// header a browser sets.
func (f *form) request(ctx context.Context, page *url.URL, vals url.Values) (*http.Request, error) {
	to, err := page.Parse(f.action)
	if err != nil {
		return nil, fmt.Errorf("consenttest: form action %q: %w", f.action, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, to.String(), strings.NewReader(vals.Encode()))
	if err != nil {
		return nil, fmt.Errorf("consenttest: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin(page))
	return req, nil
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return true
		}
	}
	return false
}

func hasClass(n *html.Node, class string) bool {
	return strings.Contains(" "+attr(n, "class")+" ", " "+class+" ")
}

// find returns the first node in document order for which match is true.
func find(n *html.Node, match func(*html.Node) bool) *html.Node {
	if match(n) {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if m := find(c, match); m != nil {
			return m
		}
	}
	return nil
}

// text is the node's text content with runs of white space folded.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// PKCE returns a new RFC 7636 code verifier (32 random octets, base64url)
// and its S256 code challenge.
func PKCE() (verifier, challenge string) {
	verifier = oauth2.GenerateVerifier()
	return verifier, oauth2.S256ChallengeFromVerifier(verifier)
}
