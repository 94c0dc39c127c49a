package settings

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"oauthd/consent"
	"oauthd/data"
	"oauthd/data/scope"
	"oauthd/issuer/admin"
)

// ClientAdmin is the slice of [admin.Service] the client settings pages
// call; *admin.Local is one. Every rule (validation, the two-secret limit,
// the last secret, migration, the review of widening changes) is its, never
// the pages': they only check that the signed-in user owns the client and
// turn its errors into sentences. The pages change settings only through
// EditClient, the owner's change, never through the operator's SetScopes
// or SetRedirectURIs, which apply without review.
type ClientAdmin interface {
	CreateClient(ctx context.Context, c admin.NewClient) (admin.CreatedClient, error)
	ListClients(ctx context.Context, status string) ([]admin.ClientView, error)
	ShowClient(ctx context.Context, id string) (admin.ClientView, error)
	GenerateSecret(ctx context.Context, id string) (admin.CreatedSecret, error)
	ListSecrets(ctx context.Context, id string) ([]admin.SecretView, error)
	RevokeSecret(ctx context.Context, id, secretID string) error
	EditClient(ctx context.Context, id string, e admin.ClientEdit) (admin.EditResult, error)
}

var _ ClientAdmin = (*admin.Local)(nil)

// Paths of the client settings pages.
const (
	clientsPath   = "/settings/clients"
	newClientPath = "/settings/clients/new"
)

// Page names; each is templates/<name>.html, with templates/common.html,
// rendered inside the site's layout.
const (
	pageClients      = "clients"
	pageClientNew    = "new"
	pageClientDetail = "client"
	pageClientMade   = "created"
)

//go:embed templates/*.html
var templateFS embed.FS

// Config configures a [Handler].
type Config struct {
	// Site is the login pages' handler: the session, the CSRF check, the
	// page frame, the security headers and the error pages are its.
	// Required.
	Site *consent.Handler
	// Clients is the operator API the pages change clients through (an
	// *admin.Local). Required.
	Clients ClientAdmin
	Logger  *slog.Logger // the pages' audit lines; default: discard
}

// Handler serves the client settings pages. Create it with [New].
type Handler struct {
	site    *consent.Handler
	clients ClientAdmin
	log     *slog.Logger
	pages   map[string]*consent.Page
}

// New checks cfg, parses the templates (failing fast on a broken one) and
// returns a Handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Site == nil || cfg.Clients == nil {
		return nil, errors.New("settings: Config needs Site and Clients")
	}
	h := &Handler{site: cfg.Site, clients: cfg.Clients, log: cfg.Logger, pages: map[string]*consent.Page{}}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	for _, name := range []string{pageClients, pageClientNew, pageClientDetail, pageClientMade} {
		p, err := consent.NewPage(name, templateFS, "templates/"+name+".html", "templates/common.html")
		if err != nil {
			return nil, fmt.Errorf("settings: %w", err)
		}
		h.pages[name] = p
	}
	return h, nil
}

// view is what every settings template gets; layout.html reads Title,
// CSSURL and Wide.
type view struct {
	Title   string
	CSSURL  string
	Message string // an error or notice shown at the top of the card
	Wide    bool   // the wider page: always
	User    data.User
	CSRF    string
	S       *settingsView // the settings pages' data
}

// Register mounts the client settings pages under /settings/clients.
func (h *Handler) Register(e *echo.Echo) {
	e.GET(clientsPath, h.listClients)
	e.GET(newClientPath, h.newClientForm)
	e.POST(newClientPath, h.createClient)
	e.GET(clientsPath+"/:id", h.showClient)
	e.POST(clientsPath+"/:id/redirect-uris", h.saveRedirectURIs)
	e.POST(clientsPath+"/:id/scopes", h.saveScopes)
	e.POST(clientsPath+"/:id/protections", h.saveProtections)
	e.POST(clientsPath+"/:id/secrets", h.generateSecret)
	e.POST(clientsPath+"/:id/secrets/revoke", h.revokeSecret)
}

// flashes are the only notices a ?done= code can show: fixed text, never
// text from the query.
var flashes = map[string]string{
	"secret_revoked":      "The secret was revoked. Calls that still send it are refused from now on; tokens already issued stay valid.",
	"redirect_uris_saved": "The redirect URIs were saved.",
	"scopes_saved":        "The scopes were saved.",
	"protections_saved":   "The protections were saved.",
	"migrated":            "The client is migrated: scopes now apply to every new authorization request. Tokens issued earlier keep working until users authorize again.",
	"change_pending":      "Saved for review: what you added waits for a platform administrator, and until then the client works with its approved settings. Anything you removed no longer applies.",
}

// settingsView is what the settings templates get (in view.S).
type settingsView struct {
	Clients []admin.ClientView // list
	Client  admin.ClientView   // detail

	Form        clientForm           // new-client form and the detail page's edit forms
	Created     *admin.CreatedClient // after creation: shown once
	NewSecret   *admin.CreatedSecret // after "Generate new secret": shown once
	Flash       string               // a fixed notice (see flashes)
	Secrets     []secretRow          // detail
	Migration   *migrationView       // legacy clients
	Pending     *changePanel         // the client's change waiting for review
	Rejected    *changePanel         // the owner's last change, rejected
	Error       string               // the section the Message belongs to: "uris", "scopes", "secrets", "migration"
	Max         struct{ URIs, Secrets int }
	CanGenerate bool
	msg         string // the page message (view.Message), set by an edit
}

// clientForm is the user's input, kept when the form is shown again.
type clientForm struct {
	Name         string
	Public       bool
	RedirectURIs string // one per line
	Groups       []choiceGroup
	Confirm      bool // migration confirmation
}

// choiceGroup is one level of scope checkboxes.
type choiceGroup struct {
	Heading string
	Level   string
	Scopes  []scopeChoice
}

type scopeChoice struct {
	Name, Description string
	Checked           bool
	Pending           bool // asked for, waiting for review
}

// changePanel shows a change of the client's settings: each row with the
// approved values and what the change adds.
type changePanel struct {
	When, By, Reason string
	Rows             []changeRow
}

type changeRow struct {
	Label    string
	Approved []string
	Added    []string
}

// newChangePanel shows change p of client cv (nil for nil).
func newChangePanel(cv admin.ClientView, p *admin.ChangeView) *changePanel {
	if p == nil {
		return nil
	}
	cp := &changePanel{When: p.ProposedAt.UTC().Format(timeLayout), By: p.ProposedBy, Reason: p.RejectReason}
	if len(p.AddScopes) > 0 {
		cp.Rows = append(cp.Rows, changeRow{"Scopes", cv.Scopes, p.AddScopes})
	}
	if len(p.AddRedirectURIs) > 0 {
		cp.Rows = append(cp.Rows, changeRow{"Redirect URIs", cv.RedirectURIs, p.AddRedirectURIs})
	}
	if p.ClientType != "" {
		cp.Rows = append(cp.Rows, changeRow{"Client type", []string{typeName(cv.ClientType)}, []string{typeName(p.ClientType)}})
	}
	if p.DropDPoPBoundAccessTokens {
		cp.Rows = append(cp.Rows, changeRow{"DPoP", []string{"required"}, []string{"no longer required"}})
	}
	if p.DropRequirePAR {
		cp.Rows = append(cp.Rows, changeRow{"Pushed authorization requests", []string{"required"}, []string{"no longer required"}})
	}
	// Browser origins (CORS) derive from the redirect URIs and the type:
	// those the change would add wait with it.
	var addOrigins []string
	for _, o := range p.AllowedOrigins {
		if !slices.Contains(cv.AllowedOrigins, o) {
			addOrigins = append(addOrigins, o)
		}
	}
	if len(addOrigins) > 0 {
		cp.Rows = append(cp.Rows, changeRow{"Browser origins (CORS)", cv.AllowedOrigins, addOrigins})
	}
	return cp
}

func typeName(t string) string {
	if t == string(data.Public) {
		return "Public"
	}
	return "Confidential"
}

type secretRow struct {
	ID, Created, LastUsed string
}

type migrationView struct {
	WithScope, WithoutScope int64
	Days                    int
	Risky                   bool // requests without scope were seen
}

// choices returns every scope as a checkbox, grouped by level, with the
// names in checked ticked and those in pending marked as waiting for
// review.
func choices(checked []string, pending ...string) []choiceGroup {
	headings := []struct {
		level   scope.Level
		heading string
	}{{scope.User, "User scopes"}, {scope.Team, "Team scopes"}, {scope.Organization, "Organization scopes"}}
	var out []choiceGroup
	for _, hd := range headings {
		g := choiceGroup{Heading: hd.heading, Level: hd.level.String()}
		for _, s := range scope.All() {
			if s.Level == hd.level {
				g.Scopes = append(g.Scopes, scopeChoice{s.Name, s.Description, slices.Contains(checked, s.Name), slices.Contains(pending, s.Name)})
			}
		}
		out = append(out, g)
	}
	return out
}

// splitLines returns the non-empty trimmed lines of s.
func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// formScopes returns the checked scope boxes; admin checks the names.
func formScopes(r *http.Request) []string {
	var out []string
	for _, v := range r.PostForm["scope"] {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

const timeLayout = "2 Jan 2006, 15:04 UTC"

func secretRows(ss []admin.SecretView) []secretRow {
	out := make([]secretRow, 0, len(ss))
	for _, s := range ss {
		r := secretRow{ID: s.SecretID, Created: s.CreatedAt.UTC().Format(timeLayout), LastUsed: "never"}
		if s.LastUsedAt != nil {
			r.LastUsed = s.LastUsedAt.UTC().Format(timeLayout)
		}
		out = append(out, r)
	}
	return out
}

// owns reports whether the client belongs to user (owner is the email).
func owns(c admin.ClientView, u data.User) bool {
	return u.Email != "" && strings.EqualFold(strings.TrimSpace(c.Owner), u.Email)
}

// errForeign stands for "no such client, or not yours": both get the same
// 404 page.
var errForeign = errors.New("client not found or not owned")

// settingsSession returns the session and user, or writes the response
// (303 to the login page, or a 500 page) and returns ok false.
func (h *Handler) settingsSession(c echo.Context, returnTo string) (data.Session, data.User, bool, error) {
	s, u, ok, err := h.site.SignedIn(c, returnTo)
	if !ok {
		return s, u, false, err
	}
	// The admin operations' audit records name the developer who acted.
	r := c.Request()
	c.SetRequest(r.WithContext(admin.WithActor(r.Context(), admin.Actor{
		Via: "settings_page", UID: -1, User: u.ID, RemoteAddr: c.RealIP(),
	})))
	return s, u, true, nil
}

// ownClient loads client id when user owns it; otherwise errForeign.
func (h *Handler) ownClient(ctx context.Context, id string, u data.User) (admin.ClientView, error) {
	if id == "" || len(id) > 200 {
		return admin.ClientView{}, errForeign
	}
	cv, err := h.clients.ShowClient(ctx, id)
	if errors.Is(err, data.ErrNotFound) {
		return admin.ClientView{}, errForeign
	}
	if err != nil {
		return admin.ClientView{}, err
	}
	if !owns(cv, u) {
		return admin.ClientView{}, errForeign
	}
	return cv, nil
}

// notFoundPage is the one answer for a client that does not exist or
// belongs to someone else.
func (h *Handler) notFoundPage(c echo.Context) error {
	return h.site.ErrorPage(c, http.StatusNotFound, "Client not found",
		"There is no OAuth client with this ID among your clients.")
}

// checkCSRF parses the form and checks the session's CSRF token (constant
// time) and the Origin. On failure it writes the 403 page and returns false.
func (h *Handler) checkCSRF(c echo.Context, s data.Session, event string) (bool, error) {
	r := c.Request()
	if !h.site.ValidPost(r, s) {
		h.log.LogAttrs(r.Context(), slog.LevelWarn, "audit", slog.String("event", event+"_csrf_failed"),
			slog.Int64("user_id", s.UserID), slog.String("remote_addr", c.RealIP()))
		return false, h.site.ErrorPage(c, http.StatusForbidden, "Request refused",
			"This request did not come from this site's settings page, so nothing was changed. Open the page again and retry.")
	}
	return true, nil
}

// userMessage turns an admin error into a sentence for the page and its
// status; ok is false for errors that are not the user's (a 500).
func userMessage(err error) (msg string, status int, ok bool) {
	switch {
	case errors.Is(err, data.ErrTooManySecrets):
		return "This client already has 2 active secrets: revoke one first, then generate a new one.", http.StatusConflict, true
	case errors.Is(err, data.ErrLastSecret):
		return "This is the client's only secret and a confidential client needs one: generate a new secret first, switch your calls to it, then revoke this one.", http.StatusConflict, true
	case errors.Is(err, data.ErrNotFound):
		return "That secret is not active (it may have been revoked already).", http.StatusNotFound, true
	case errors.Is(err, data.ErrInvalid), errors.Is(err, data.ErrExists), errors.Is(err, data.ErrConflict):
		return webSentence(err.Error()), http.StatusBadRequest, true
	}
	return "", 0, false
}

// webSentence drops the command-line hints (flags, `oauthd …` commands,
// README pointers) that admin's messages carry for operators.
func webSentence(msg string) string {
	parts := strings.Split(msg, "; ")
	keep := parts[:1]
	for _, p := range parts[1:] {
		if strings.ContainsAny(p, "`") || strings.Contains(p, "--") || strings.Contains(p, "README") {
			continue
		}
		keep = append(keep, p)
	}
	out := strings.Join(keep, "; ")
	out = strings.TrimSuffix(out, ";")
	if out != "" && !strings.HasSuffix(out, ".") {
		out += "."
	}
	return strings.ToUpper(out[:1]) + out[1:]
}

// settingsRender renders a settings page (wide layout).
func (h *Handler) settingsRender(c echo.Context, status int, page string, v view) error {
	v.CSSURL, v.Wide = h.site.CSSURL(), true
	v.S.Max.URIs, v.S.Max.Secrets = data.MaxRedirectURIs, data.MaxActiveSecrets
	return h.site.Render(c, status, h.pages[page], v)
}

// listClients serves GET /settings/clients.
func (h *Handler) listClients(c echo.Context) error {
	s, u, ok, err := h.settingsSession(c, clientsPath)
	if !ok {
		return err
	}
	all, err := h.clients.ListClients(c.Request().Context(), "")
	if err != nil {
		return h.site.InternalError(c, "list clients", err)
	}
	sv := &settingsView{}
	for _, cv := range all {
		if owns(cv, u) {
			sv.Clients = append(sv.Clients, cv)
		}
	}
	return h.settingsRender(c, http.StatusOK, pageClients, view{Title: "OAuth clients", User: u, CSRF: s.CSRF, S: sv})
}

// newClientForm serves GET /settings/clients/new.
func (h *Handler) newClientForm(c echo.Context) error {
	s, u, ok, err := h.settingsSession(c, newClientPath)
	if !ok {
		return err
	}
	sv := &settingsView{Form: clientForm{Groups: choices(nil)}}
	return h.settingsRender(c, http.StatusOK, pageClientNew, view{Title: "Register a new client", User: u, CSRF: s.CSRF, S: sv})
}

// createClient serves POST /settings/clients/new.
func (h *Handler) createClient(c echo.Context) error {
	r := c.Request()
	ctx := r.Context()
	if err := r.ParseForm(); err != nil {
		return h.site.ErrorPage(c, http.StatusBadRequest, "Bad request", "The form could not be read.")
	}
	s, u, ok, err := h.settingsSession(c, newClientPath)
	if !ok {
		return err
	}
	if ok, err := h.checkCSRF(c, s, "client_create"); !ok {
		return err
	}
	scopes := formScopes(r)
	form := clientForm{
		Name:         strings.TrimSpace(r.PostForm.Get("name")),
		Public:       r.PostForm.Get("client_type") == "public",
		RedirectURIs: r.PostForm.Get("redirect_uris"),
		Groups:       choices(scopes),
	}
	v := view{Title: "Register a new client", User: u, CSRF: s.CSRF, S: &settingsView{Form: form}}
	switch ct := r.PostForm.Get("client_type"); {
	case ct != "public" && ct != "confidential":
		v.Message = "Choose the client type: confidential (a server that can keep a secret) or public (an app in the browser or on a device)."
		return h.settingsRender(c, http.StatusBadRequest, pageClientNew, v)
	case len(scopes) == 0:
		// admin refuses this too; its message names a command-line flag.
		v.Message = "Choose at least one scope."
		return h.settingsRender(c, http.StatusBadRequest, pageClientNew, v)
	}
	created, err := h.clients.CreateClient(c.Request().Context(), admin.NewClient{
		Owner: u.Email, Name: form.Name, RedirectURIs: splitLines(form.RedirectURIs),
		Scopes: scopes, Public: form.Public,
	})
	if err != nil {
		msg, status, ok := userMessage(err)
		if !ok {
			return h.site.InternalError(c, "create client", err)
		}
		v.Message = msg
		return h.settingsRender(c, status, pageClientNew, v)
	}
	h.log.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("event", "settings_client_created"),
		slog.Int64("user_id", u.ID), slog.String("client_id", created.ClientID))
	v.Title = "Client registered"
	v.S = &settingsView{Created: &created}
	return h.settingsRender(c, http.StatusOK, pageClientMade, v)
}

// showClient serves GET /settings/clients/:id.
func (h *Handler) showClient(c echo.Context) error {
	id := c.Param("id")
	s, u, ok, err := h.settingsSession(c, clientsPath+"/"+id)
	if !ok {
		return err
	}
	cv, err := h.ownClient(c.Request().Context(), id, u)
	if errors.Is(err, errForeign) {
		return h.notFoundPage(c)
	}
	if err != nil {
		return h.site.InternalError(c, "show client", err)
	}
	return h.detail(c, http.StatusOK, u, s, cv, func(sv *settingsView) {
		sv.Flash = flashes[c.QueryParam("done")]
	})
}

// detail renders the client's page; edit may set the message, the kept
// input or a new secret.
func (h *Handler) detail(c echo.Context, status int, u data.User, s data.Session, cv admin.ClientView, edit func(*settingsView)) error {
	sv := &settingsView{
		Client:  cv,
		Secrets: secretRows(cv.Secrets),
		Form: clientForm{
			RedirectURIs: strings.Join(cv.RedirectURIs, "\n"),
			Groups:       choices(cv.Scopes),
		},
		Pending:  newChangePanel(cv, cv.PendingChange),
		Rejected: newChangePanel(cv, cv.RejectedChange),
	}
	if p := cv.PendingChange; p != nil {
		// The forms show what the owner asked for; the panel says which
		// part of it waits.
		sv.Form.RedirectURIs = strings.Join(p.RedirectURIs, "\n")
		sv.Form.Groups = choices(p.Scopes, p.AddScopes...)
	}
	sv.CanGenerate = cv.ClientType == string(data.Confidential) && len(cv.Secrets) < data.MaxActiveSecrets
	if cv.Legacy && cv.AuthorizationRequests != nil {
		ar := cv.AuthorizationRequests
		sv.Migration = &migrationView{WithScope: ar.WithScope, WithoutScope: ar.WithoutScope, Days: ar.Days,
			Risky: cv.MigrationSafe == nil || !*cv.MigrationSafe}
	}
	v := view{Title: cv.Name, User: u, CSRF: s.CSRF, S: sv}
	if edit != nil {
		edit(sv)
		v.Message = sv.msg
	}
	return h.settingsRender(c, status, pageClientDetail, v)
}

// clientAction runs the common part of every POST on a client: form,
// session, CSRF, ownership. It returns ok false when it has answered.
func (h *Handler) clientAction(c echo.Context, event string) (data.Session, data.User, admin.ClientView, bool, error) {
	r := c.Request()
	id := c.Param("id")
	var cv admin.ClientView
	if err := r.ParseForm(); err != nil {
		return data.Session{}, data.User{}, cv, false, h.site.ErrorPage(c, http.StatusBadRequest, "Bad request", "The form could not be read.")
	}
	s, u, ok, err := h.settingsSession(c, clientsPath+"/"+id)
	if !ok {
		return s, u, cv, false, err
	}
	if ok, err := h.checkCSRF(c, s, event); !ok {
		return s, u, cv, false, err
	}
	cv, err = h.ownClient(r.Context(), id, u)
	if errors.Is(err, errForeign) {
		return s, u, cv, false, h.notFoundPage(c)
	}
	if err != nil {
		return s, u, cv, false, h.site.InternalError(c, event, err)
	}
	return s, u, cv, true, nil
}

// done redirects to the client's page with a fixed notice code.
func done(c echo.Context, id, code string) error {
	return consent.SeeOther(c, clientsPath+"/"+id+"?done="+code)
}

// failed re-renders the client's page with err's message in section, or a
// 500 page for an unexpected error.
func (h *Handler) failed(c echo.Context, op string, err error, u data.User, s data.Session, cv admin.ClientView, section string, keep func(*settingsView)) error {
	msg, status, ok := userMessage(err)
	if !ok {
		return h.site.InternalError(c, op, err)
	}
	return h.detail(c, status, u, s, cv, func(sv *settingsView) {
		sv.Error, sv.msg = section, msg
		if keep != nil {
			keep(sv)
		}
	})
}

// saveRedirectURIs serves POST /settings/clients/:id/redirect-uris.
func (h *Handler) saveRedirectURIs(c echo.Context) error {
	s, u, cv, ok, err := h.clientAction(c, "client_redirect_uris")
	if !ok {
		return err
	}
	text := c.Request().PostForm.Get("redirect_uris")
	uris := splitLines(text)
	if uris == nil {
		uris = []string{} // none: refused by the rules, with their sentence
	}
	res, err := h.clients.EditClient(c.Request().Context(), cv.ClientID, admin.ClientEdit{RedirectURIs: uris})
	if err != nil {
		return h.failed(c, "set redirect URIs", err, u, s, cv, "uris", func(sv *settingsView) { sv.Form.RedirectURIs = text })
	}
	if res.Pending && res.Client.PendingChange != nil && len(res.Client.PendingChange.AddRedirectURIs) > 0 {
		return done(c, cv.ClientID, "change_pending")
	}
	return done(c, cv.ClientID, "redirect_uris_saved")
}

// saveScopes serves POST /settings/clients/:id/scopes: for a legacy client
// this is the migration, which needs the explicit confirmation when
// requests without a scope parameter were seen recently.
func (h *Handler) saveScopes(c echo.Context) error {
	s, u, cv, ok, err := h.clientAction(c, "client_scopes")
	if !ok {
		return err
	}
	r := c.Request()
	scopes := formScopes(r)
	confirm := r.PostForm.Get("confirm") == "yes"
	section := "scopes"
	if cv.Legacy {
		section = "migration"
	}
	keep := func(sv *settingsView) {
		sv.Form.Groups = choices(scopes)
		sv.Form.Confirm = confirm
	}
	fail := func(msg string) error {
		return h.detail(c, http.StatusBadRequest, u, s, cv, func(sv *settingsView) {
			sv.Error, sv.msg = section, msg
			keep(sv)
		})
	}
	if len(scopes) == 0 {
		return fail("Choose at least one scope.")
	}
	if cv.Legacy && (cv.MigrationSafe == nil || !*cv.MigrationSafe) && !confirm {
		return fail("Authorization requests without a scope parameter were seen recently. " +
			"Confirm that your authorization URL now carries scope before saving: users opening the old URL will fail to authorize.")
	}
	res, err := h.clients.EditClient(r.Context(), cv.ClientID, admin.ClientEdit{Scopes: scopes, Force: confirm})
	if err != nil {
		return h.failed(c, "set scopes", err, u, s, cv, section, keep)
	}
	code := "scopes_saved"
	if res.Pending && res.Client.PendingChange != nil && len(res.Client.PendingChange.AddScopes) > 0 {
		code = "change_pending"
	}
	if cv.Legacy {
		code = "migrated"
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "audit", slog.String("event", "settings_client_migrated"),
			slog.Int64("user_id", u.ID), slog.String("client_id", cv.ClientID), slog.Bool("confirmed", confirm))
	}
	return done(c, cv.ClientID, code)
}

// saveProtections serves POST /settings/clients/:id/protections: the
// DPoP and PAR requirements. Turning one on applies at once; turning one
// off on an approved client waits for review.
func (h *Handler) saveProtections(c echo.Context) error {
	s, u, cv, ok, err := h.clientAction(c, "client_protections")
	if !ok {
		return err
	}
	r := c.Request()
	dpop := r.PostForm.Get("dpop_bound_access_tokens") == "on"
	par := r.PostForm.Get("require_pushed_authorization_requests") == "on"
	res, err := h.clients.EditClient(r.Context(), cv.ClientID, admin.ClientEdit{DPoPBoundAccessTokens: &dpop, RequirePAR: &par})
	if err != nil {
		return h.failed(c, "set protections", err, u, s, cv, "protections", nil)
	}
	if p := res.Client.PendingChange; res.Pending && p != nil && (p.DropDPoPBoundAccessTokens || p.DropRequirePAR) {
		return done(c, cv.ClientID, "change_pending")
	}
	return done(c, cv.ClientID, "protections_saved")
}

// generateSecret serves POST /settings/clients/:id/secrets. The new secret
// is shown once, on this response (never through a redirect).
func (h *Handler) generateSecret(c echo.Context) error {
	s, u, cv, ok, err := h.clientAction(c, "client_secret_generate")
	if !ok {
		return err
	}
	ctx := c.Request().Context()
	created, err := h.clients.GenerateSecret(ctx, cv.ClientID)
	if err != nil {
		return h.failed(c, "generate secret", err, u, s, cv, "secrets", nil)
	}
	if cv2, err := h.clients.ShowClient(ctx, cv.ClientID); err == nil {
		cv = cv2
	} else {
		return h.site.InternalError(c, "show client", err)
	}
	return h.detail(c, http.StatusOK, u, s, cv, func(sv *settingsView) { sv.NewSecret = &created })
}

// revokeSecret serves POST /settings/clients/:id/secrets/revoke.
func (h *Handler) revokeSecret(c echo.Context) error {
	s, u, cv, ok, err := h.clientAction(c, "client_secret_revoke")
	if !ok {
		return err
	}
	sid := strings.TrimSpace(c.Request().PostForm.Get("secret_id"))
	if sid == "" || len(sid) > 100 {
		return h.detail(c, http.StatusBadRequest, u, s, cv, func(sv *settingsView) {
			sv.Error, sv.msg = "secrets", "Choose the secret to revoke."
		})
	}
	if err := h.clients.RevokeSecret(c.Request().Context(), cv.ClientID, sid); err != nil {
		return h.failed(c, "revoke secret", err, u, s, cv, "secrets", nil)
	}
	return done(c, cv.ClientID, "secret_revoked")
}
