package consent

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"oauthd/data"
	"oauthd/data/password"
	"oauthd/issuer"
	"oauthd/issuer/throttle"
)

// Authorizer validates authorization requests and records the user's
// decision; *issuer.Server is one. Its errors are *issuer.PageError (shown
// as a 400 page, never redirected) or *issuer.RedirectError (303 to its URL).
type Authorizer interface {
	ParseAuthorize(ctx context.Context, q url.Values) (*issuer.AuthorizeRequest, error)
	// CheckAuthorize validates like ParseAuthorize without counting the
	// request (used before login, so each authorization counts once).
	CheckAuthorize(ctx context.Context, q url.Values) (*issuer.AuthorizeRequest, error)
	// ApproveLogin records the consent of login.UserID, authenticated at
	// login.AuthTime (the ID token's auth_time).
	ApproveLogin(ctx context.Context, q url.Values, login issuer.Login) (string, error)
	Deny(ctx context.Context, q url.Values, userID int64) (string, error)
	// Interact says what a validated request needs given the login (nil:
	// nobody): the login page, the consent page, or, for prompt=none,
	// an approval without a page or an error redirect (OpenID Connect
	// Core §3.1.2.1).
	Interact(ctx context.Context, ar *issuer.AuthorizeRequest, login *issuer.Login) (issuer.Step, error)
	// AfterLogin is the query of ar to come back to after the login.
	AfterLogin(ar *issuer.AuthorizeRequest) url.Values
	// CheckLogout validates an end-session request (OpenID Connect
	// RP-Initiated Logout 1.0).
	CheckLogout(ctx context.Context, q url.Values) (*issuer.LogoutRequest, error)
}

// Store is the slice of [data.Store] the pages use.
type Store interface {
	GetUser(ctx context.Context, id int64) (data.User, error)
	GetUserByLogin(ctx context.Context, login string) (data.User, error)
	CreateSession(ctx context.Context, s data.Session) error
	GetSession(ctx context.Context, hash []byte) (data.Session, error)
	DeleteSession(ctx context.Context, hash []byte) error
	// For the hash upgrade at login and the login handover.
	UpdateUser(ctx context.Context, id int64, update func(data.User) (data.User, error)) (data.User, error)
	CreateUser(ctx context.Context, u data.User) (data.User, error)
	GetUserByExternalID(ctx context.Context, id string) (data.User, error)
	UseNonce(ctx context.Context, key []byte, expiresAt time.Time) error
}

// Config configures a [Handler].
type Config struct {
	Store      Store            // required; a data.Store
	Authorizer Authorizer       // required; the issuer
	Logger     *slog.Logger     // default: discard
	Now        func() time.Time // default: time.Now
	// AppURL is where the pages live, e.g. https://app.example. An https URL
	// makes the cookies Secure; POSTs whose Origin header names another
	// origin are refused. "" turns both off (tests, plain-http development).
	AppURL     string
	SessionTTL time.Duration // default 12 h
	// Registerer receives the login limiter's and the password gate's
	// metrics; nil means none.
	Registerer prometheus.Registerer
	// PasswordSlots is how many password checks (argon2id, 19 MiB each)
	// run at once; default the usable cores (password.DefaultSlots).
	PasswordSlots int
	// Handover, when set, hands the login to the platform (the built-in
	// form is then off); it needs AppURL. nil: the built-in login form.
	Handover *Handover
	// Throttle, when set, shares the failed logins' counts with every
	// replica that has the same (issuer/throttle.Shared); nil counts them
	// in this process.
	Throttle *throttle.Shared
	// Outage is told of every page answered 503 because the store was
	// unavailable (issuer.Outage); nil: not logged.
	Outage *issuer.Outage
}

// Limits of failed logins (issuer/throttle). Per account (by user ID,
// whatever login name was typed) *and source address*: login names are
// public, and a limit per account alone would let anyone lock a user out.
// A login that names no user is limited like an account, so that the
// limit does not tell the two apart. The address ceiling covers a spray
// over many accounts from one address; it is higher because many users
// may share one address (NAT).
var loginLimits = throttle.Rules{
	throttle.Account: {Burst: 5, Every: time.Minute},       // 5 at once, then one a minute
	throttle.Login:   {Burst: 5, Every: time.Minute},       // the same for unknown logins
	throttle.Addr:    {Burst: 20, Every: 15 * time.Second}, // 20 at once, then 4 a minute
}

// Handler serves the login, consent and error pages. Create it with [New].
type Handler struct {
	store  Store
	authz  Authorizer
	log    *slog.Logger
	now    func() time.Time
	secure bool
	// sessionName and csrfName are the cookies' names (__Host- prefixed
	// when secure), csrfPath the login CSRF cookie's path ("/" when
	// secure, as __Host- requires; else the login page).
	sessionName, csrfName, csrfPath string
	origin                          string // scheme://host of AppURL, or ""
	sessionTTL                      time.Duration
	pages                           map[string]*template.Template
	css                             []byte
	cssURL                          string
	limiter                         *throttle.Limiter
	gate                            *password.Gate // bounds the password checks running at once
	handover                        *Handover
	handoverName                    string // the handover cookie's name
	appURL                          string // AppURL without a trailing slash
	handoverLimiter                 *throttle.Limiter
	deviceLimiter                   *throttle.Limiter // wrong user codes on /device (device.go)
	outage                          *issuer.Outage
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static/oauthd.css
var cssFile []byte

// Page names; each is templates/<name>.html rendered inside layout.html.
const (
	pageLogin     = "login"
	pageConsent   = "consent"
	pageError     = "error"
	pageLoggedOut = "logged-out"
	pageLoggedIn  = "logged-in"
	pageLogout    = "logout"
	pageDevice    = "device"
)

// New checks cfg, parses the templates (failing fast on a broken one) and
// returns a Handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil || cfg.Authorizer == nil {
		return nil, errors.New("consent: Config needs Store and Authorizer")
	}
	h := &Handler{
		store:      cfg.Store,
		authz:      cfg.Authorizer,
		log:        cfg.Logger,
		now:        cfg.Now,
		sessionTTL: cfg.SessionTTL,
		css:        cssFile,
		pages:      map[string]*template.Template{},
		outage:     cfg.Outage,
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.sessionTTL <= 0 {
		h.sessionTTL = 12 * time.Hour
	}
	if cfg.AppURL != "" {
		u, err := url.Parse(cfg.AppURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("consent: Config.AppURL %q must be an http(s) URL", cfg.AppURL)
		}
		h.secure = u.Scheme == "https"
		h.origin = u.Scheme + "://" + strings.ToLower(u.Host)
		h.appURL = strings.TrimSuffix(cfg.AppURL, "/")
	}
	if ho := cfg.Handover; ho != nil {
		u, err := url.Parse(ho.LoginURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || ho.Verifier == nil || h.appURL == "" {
			return nil, errors.New("consent: Config.Handover needs an http(s) LoginURL, a Verifier, and Config.AppURL")
		}
		h.handover = ho
	}
	h.sessionName, h.csrfName = cookieNames(h.secure)
	h.handoverName = handoverCookie
	if h.secure {
		h.handoverName = hostPrefix + handoverCookie
	}
	h.csrfPath = loginPath
	if h.secure {
		h.csrfPath = "/"
	}
	sum := sha256.Sum256(cssFile)
	h.cssURL = staticCSSPath + "?v=" + hex.EncodeToString(sum[:6])

	base, err := parseLayout()
	if err != nil {
		return nil, err
	}
	for _, name := range []string{pageLogin, pageConsent, pageError, pageLoggedOut, pageLoggedIn, pageLogout, pageDevice} {
		t, err := parsePage(base, templateFS, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("consent: parse %s: %w", name, err)
		}
		h.pages[name] = t
	}
	h.limiter = throttle.New(throttle.Config{Name: "login", Rules: loginLimits, Now: h.now, Registerer: cfg.Registerer, Shared: cfg.Throttle})
	h.deviceLimiter = throttle.New(throttle.Config{Name: "device_user_code", Rules: deviceCodeLimits, Now: h.now, Registerer: cfg.Registerer, Shared: cfg.Throttle})
	h.handoverLimiter = throttle.New(throttle.Config{Name: "login_handover", Rules: handoverLimits, Now: h.now, Registerer: cfg.Registerer})
	h.gate = password.NewGate(password.GateConfig{Slots: cfg.PasswordSlots, Registerer: cfg.Registerer})
	return h, nil
}

// Paths served by [Handler.Register].
const (
	loginPath     = "/auth/login"
	logoutPath    = "/auth/logout"
	authorizePath = "/auth/oauth2/authorize"
	staticCSSPath = "/auth/static/oauthd.css"
)

// Register mounts the pages: GET/POST /auth/login, GET/POST /auth/logout
// (the end-session endpoint of OpenID Connect RP-Initiated Logout 1.0),
// GET/POST /auth/oauth2/authorize and the stylesheet. The client settings
// under /settings/clients are package consent/settings'.
func (h *Handler) Register(e *echo.Echo) {
	e.GET(loginPath, h.showLogin)
	e.POST(loginPath, h.checkLogin)
	e.POST(logoutPath, h.logout)
	e.GET(logoutPath, h.endSession)
	if h.handover != nil {
		e.GET(handoverPath, h.finishHandover)
	}
	e.GET(authorizePath, h.showConsent)
	e.POST(authorizePath, h.decide)
	e.GET(staticCSSPath, h.serveCSS)
	e.GET(devicePath, h.showDevice)
	e.POST(devicePath, h.postDevice)
}

// view is what every template gets.
type view struct {
	Title   string
	CSSURL  string
	Status  int
	Message string // an error or notice shown at the top of the card

	// login
	Login    string
	ReturnTo string
	CSRF     string
	Retry    int // seconds, on 429

	// consent
	User        data.User
	ClientName  string
	ClientOwner string
	// VouchedBy is, for an AI assistant (a client ID metadata document),
	// the host that vouches for it, shown above the name it gives itself.
	VouchedBy string
	// Resources are the APIs the tokens will reach (RFC 8707); none for
	// the platform's API.
	Resources    []string
	Groups       []scopeGroup
	Unrestricted bool
	RedirectTo   string // origin shown to the user
	Hidden       []hiddenField

	// error
	ErrorTitle string

	// logout: the application that asked to sign the user out ("" for none)
	AppName string

	// device: the code typed or prefilled (as typed), the step
	// ("enter", "confirm", "done") and, when done, whether it was allowed
	UserCode    string
	DeviceStep  string
	DeviceAllow bool

	// layout.html: the wider page (consent/settings' pages); false here
	Wide bool
}

type hiddenField struct{ Name, Value string }

// baseCSP is the Content-Security-Policy of every page; the consent page adds
// the client's redirect origin to form-action, because Chromium enforces
// form-action on the redirect that follows the POST.
const baseCSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// setPageHeaders sets the security headers of every HTML page.
func setPageHeaders(w http.ResponseWriter, csp string) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Pragma", "no-cache")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
}

// render writes page with status and the security headers. extraFormAction
// is added to the CSP's form-action (already validated by [cspSource]).
func (h *Handler) render(c echo.Context, status int, page string, v view, extraFormAction string) error {
	v.CSSURL = h.cssURL
	v.Status = status
	csp := baseCSP
	if extraFormAction != "" {
		csp += " " + extraFormAction
	}
	return h.write(c, status, page, h.pages[page], v, csp)
}

// errorPage renders the error page.
func (h *Handler) errorPage(c echo.Context, status int, title, message string) error {
	return h.render(c, status, pageError, view{Title: title, ErrorTitle: title, Message: message}, "")
}

// internalError logs err and renders a generic 500 page; a store outage
// (data.ErrUnavailable) is the 503 page with Retry-After instead, reported
// to the Outage (logged once per outage).
func (h *Handler) internalError(c echo.Context, op string, err error) error {
	if issuer.Unavailable(err) {
		h.outage.Refused(c.Request().Context(), err)
		c.Response().Header().Set("Retry-After", strconv.Itoa(issuer.RetryAfterUnavailable))
		return h.errorPage(c, http.StatusServiceUnavailable, "Temporarily unavailable",
			"The service cannot reach its database right now. Please try again in a moment.")
	}
	h.log.ErrorContext(c.Request().Context(), op, slog.Any("err", err))
	return h.errorPage(c, http.StatusInternalServerError, "Something went wrong",
		"The server could not complete your request. Please try again in a moment.")
}

// seeOther redirects with 303 (never 307, RFC 9700 §4.12) and the page
// headers (no-store, no-referrer).
func seeOther(c echo.Context, to string) error {
	setPageHeaders(c.Response(), baseCSP)
	return c.Redirect(http.StatusSeeOther, to)
}

// authorizeError turns an Authorizer error into the response: a 400 page for
// *issuer.PageError, a 303 for *issuer.RedirectError, a 500 page otherwise.
func (h *Handler) authorizeError(c echo.Context, err error) error {
	var pe *issuer.PageError
	if errors.As(err, &pe) {
		return h.errorPage(c, http.StatusBadRequest, pe.Title, pe.Message())
	}
	var re *issuer.RedirectError
	if errors.As(err, &re) && re.URL != "" {
		return seeOther(c, re.URL)
	}
	return h.internalError(c, "authorize", err)
}

// sameOrigin refuses a POST whose Origin header names another origin than
// AppURL (defence in depth on top of the CSRF tokens, which stay the real
// protection). "null" passes: our pages send Referrer-Policy: no-referrer,
// under which browsers send "Origin: null" even for same-origin form posts
// (Fetch, "serializing a request origin").
func (h *Handler) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if h.origin == "" || o == "" || o == "null" {
		return true
	}
	return strings.EqualFold(o, h.origin)
}

// serveCSS serves the stylesheet; its URL carries a content hash, so it may
// be cached for a year.
func (h *Handler) serveCSS(c echo.Context) error {
	hd := c.Response().Header()
	hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	return c.Blob(http.StatusOK, "text/css; charset=utf-8", h.css)
}

// initial returns the upper-cased first letter of name, for the app badge.
func initial(name string) string {
	for _, r := range strings.TrimSpace(name) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return strings.ToUpper(string(r))
		}
	}
	return "?"
}
