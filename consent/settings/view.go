package settings

import (
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/issuer/admin"
)

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
	if len(p.AddPostLogoutRedirectURIs) > 0 {
		cp.Rows = append(cp.Rows, changeRow{"Post-logout redirect URIs", cv.PostLogoutRedirectURIs, p.AddPostLogoutRedirectURIs})
	}
	if len(p.AddGrantTypes) > 0 {
		cp.Rows = append(cp.Rows, changeRow{"Grant types", cv.GrantTypes, p.AddGrantTypes})
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

// detail renders the client's page; edit may set the message, the kept
// input or a new secret.
func (h *Handler) detail(c echo.Context, status int, rq request, edit func(*settingsView)) error {
	cv := rq.cv
	sv := &settingsView{
		Client:  cv,
		Secrets: secretRows(cv.Secrets),
		Form: clientForm{
			RedirectURIs:   strings.Join(cv.RedirectURIs, "\n"),
			PostLogoutURIs: strings.Join(cv.PostLogoutRedirectURIs, "\n"),
			Groups:         choices(cv.Scopes),
			GrantTypes:     grantChoices(cv.GrantTypes),
		},
		Pending:  newChangePanel(cv, cv.PendingChange),
		Rejected: newChangePanel(cv, cv.RejectedChange),
	}
	if p := cv.PendingChange; p != nil {
		// The forms show what the owner asked for; the panel says which
		// part of it waits.
		sv.Form.RedirectURIs = strings.Join(p.RedirectURIs, "\n")
		sv.Form.PostLogoutURIs = strings.Join(p.PostLogoutRedirectURIs, "\n")
		sv.Form.Groups = choices(p.Scopes, p.AddScopes...)
		sv.Form.GrantTypes = grantChoices(p.GrantTypes)
	}
	sv.CanGenerate = cv.ClientType == string(data.Confidential) && len(cv.Secrets) < data.MaxActiveSecrets && cv.TokenEndpointAuthMethod != "private_key_jwt"
	if cv.Legacy && cv.AuthorizationRequests != nil {
		ar := cv.AuthorizationRequests
		sv.Migration = &migrationView{WithScope: ar.WithScope, WithoutScope: ar.WithoutScope, Days: ar.Days,
			Risky: cv.MigrationSafe == nil || !*cv.MigrationSafe}
	}
	v := view{Title: cv.Name, User: rq.u, CSRF: rq.s.CSRF, S: sv}
	if edit != nil {
		edit(sv)
		v.Message = sv.msg
	}
	return h.settingsRender(c, status, pageClientDetail, v)
}
