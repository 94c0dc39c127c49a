package settings

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"

	"github.com/labstack/echo/v4"

	"oauthd/consent"
	"oauthd/data"
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
	pageApps         = "apps"
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
	// Apps is what the Connected apps page (/settings/apps) calls;
	// default: Clients, when it is also an AppAdmin (an *admin.Local is).
	Apps   AppAdmin
	Logger *slog.Logger // the pages' audit lines; default: discard
}

// Handler serves the client settings pages. Create it with [New].
type Handler struct {
	site    *consent.Handler
	clients ClientAdmin
	apps    AppAdmin // nil: no Connected apps page
	log     *slog.Logger
	pages   map[string]*consent.Page
}

// New checks cfg, parses the templates (failing fast on a broken one) and
// returns a Handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Site == nil || cfg.Clients == nil {
		return nil, errors.New("settings: Config needs Site and Clients")
	}
	h := &Handler{site: cfg.Site, clients: cfg.Clients, apps: cfg.Apps, log: cfg.Logger, pages: map[string]*consent.Page{}}
	if h.apps == nil {
		h.apps, _ = cfg.Clients.(AppAdmin)
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	for _, name := range []string{pageClients, pageClientNew, pageClientDetail, pageClientMade, pageApps} {
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
	A       *appsView     // the Connected apps page's data
}

// Register mounts the client settings pages under /settings/clients and
// the Connected apps page under /settings/apps, each handler in its own
// file, behind the steps its route takes (access.go).
func (h *Handler) Register(e *echo.Echo) {
	e.GET(clientsPath, h.guard(steps{back: clientsPath}, h.listClients))                              // list.go
	e.GET(newClientPath, h.guard(steps{back: newClientPath}, h.newClientForm))                        // new.go
	e.POST(newClientPath, h.guard(steps{back: newClientPath, post: "client_create"}, h.createClient)) // create.go
	e.GET(clientsPath+"/:id", h.guard(steps{client: true}, h.showClient))                             // show.go
	onClient := func(event string, next handler) echo.HandlerFunc {
		return h.guard(steps{client: true, post: event}, next)
	}
	e.POST(clientsPath+"/:id/redirect-uris", onClient("client_redirect_uris", h.saveRedirectURIs))         // redirect_uris.go
	e.POST(clientsPath+"/:id/post-logout-uris", onClient("client_post_logout_uris", h.savePostLogoutURIs)) // post_logout_uris.go
	e.POST(clientsPath+"/:id/scopes", onClient("client_scopes", h.saveScopes))                             // scopes.go
	e.POST(clientsPath+"/:id/protections", onClient("client_protections", h.saveProtections))              // protections.go
	e.POST(clientsPath+"/:id/grant-types", onClient("client_grant_types", h.saveGrantTypes))               // grant_types.go
	e.POST(clientsPath+"/:id/secrets", onClient("client_secret_generate", h.generateSecret))               // secret_generate.go
	e.POST(clientsPath+"/:id/secrets/revoke", onClient("client_secret_revoke", h.revokeSecret))            // secret_revoke.go
	if h.apps != nil {
		e.GET(appsPath, h.guard(steps{back: appsPath}, h.listApps))                                     // apps.go
		e.POST(appsPath+"/:id/revoke", h.guard(steps{back: appsPath, post: "app_revoke"}, h.revokeApp)) // apps_revoke.go
	}
}

// settingsRender renders a settings page (wide layout).
func (h *Handler) settingsRender(c echo.Context, status int, page string, v view) error {
	v.CSSURL, v.Wide = h.site.CSSURL(), true
	v.S.Max.URIs, v.S.Max.Secrets = data.MaxRedirectURIs, data.MaxActiveSecrets
	return h.site.Render(c, status, h.pages[page], v)
}
