package settings

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/consent"
	"oauthd/data"
	"oauthd/issuer/admin"
)

// AppAdmin is the slice of [admin.Service] the Connected apps page calls
// (*admin.Local is one): the user's apps, and removing one. The page
// passes the signed-in user's ID, never a name.
type AppAdmin interface {
	ListUserApps(ctx context.Context, user string) ([]admin.AppView, error)
	RevokeUserApp(ctx context.Context, user, clientID string) (admin.RemovedApp, error)
}

var _ AppAdmin = (*admin.Local)(nil)

// appsPath is the Connected apps page.
const appsPath = "/settings/apps"

// appsView is what templates/apps.html gets (in view.A).
type appsView struct {
	Apps    []appRow
	Removed string // the confirmation: the name of the app just removed
}

// appRow is one connected app.
type appRow struct {
	ClientID     string
	RevokeURL    string // the form's action: the client ID path-escaped
	Name         string // the app's name, or "Deleted app"
	Developer    string
	Status       string // "", "rejected" or "deleted"
	Groups       []consent.ScopeGroup
	Unrestricted bool
	Allowed      string
	AllowedISO   string
	LastUsed     string // "" when no grant is live
	LastUsedISO  string
}

// listApps serves GET /settings/apps: the apps the signed-in user allowed.
func (h *Handler) listApps(c echo.Context, rq request) error {
	ctx := c.Request().Context()
	apps, err := h.apps.ListUserApps(ctx, userRef(rq.u))
	if err != nil {
		return h.site.InternalError(c, "list apps", err)
	}
	loc := userLocation(rq.u)
	av := &appsView{Apps: []appRow{}}
	for _, a := range apps {
		r := appRow{ClientID: a.ClientID, RevokeURL: appsPath + "/" + url.PathEscape(a.ClientID) + "/revoke", Name: a.Name, Developer: a.Developer, Groups: consent.ScopeGroups(a.Scopes),
			Unrestricted: a.Unrestricted, Allowed: a.FirstAllowedAt.In(loc).Format(appTimeLayout),
			AllowedISO: a.FirstAllowedAt.UTC().Format(time.RFC3339)}
		switch a.Status {
		case admin.AppRejected:
			r.Status = "rejected"
		case admin.AppDeleted:
			r.Status, r.Name = "deleted", "Deleted app"
		}
		if a.LastUsedAt != nil {
			r.LastUsed, r.LastUsedISO = a.LastUsedAt.In(loc).Format(appTimeLayout), a.LastUsedAt.UTC().Format(time.RFC3339)
		}
		av.Apps = append(av.Apps, r)
	}
	// The confirmation after a removal (post/redirect/get): only for a
	// removal made in this session (removedMAC), never text from the
	// query: the name comes from the client record.
	if id := c.QueryParam("removed"); id != "" && len(id) <= 200 && hmac.Equal([]byte(c.QueryParam("check")), []byte(removedMAC(rq.s, id))) {
		av.Removed = "The app"
		if cv, err := h.clients.ShowClient(ctx, id); err == nil && cv.Name != "" {
			av.Removed = cv.Name
		}
	}
	return h.appsRender(c, http.StatusOK, view{Title: "Connected apps", User: rq.u, CSRF: rq.s.CSRF, A: av})
}

// appTimeLayout shows a time in the user's time zone.
const appTimeLayout = "2 Jan 2006, 15:04 MST"

// userLocation is the user's time zone, or UTC.
func userLocation(u data.User) *time.Location {
	if u.TimeZone != "" {
		if loc, err := time.LoadLocation(u.TimeZone); err == nil {
			return loc
		}
	}
	return time.UTC
}

// userRef names the signed-in user to admin by ID.
func userRef(u data.User) string { return strconv.FormatInt(u.ID, 10) }

// removedMAC binds the confirmation of removing clientID to the session:
// an HMAC under the session's CSRF token (a secret of the session), so a
// link made elsewhere cannot show "X no longer has access" for an app the
// user never removed.
func removedMAC(s data.Session, clientID string) string {
	m := hmac.New(sha256.New, []byte(s.CSRF))
	m.Write([]byte("app_removed\x00" + clientID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// appsRender renders the Connected apps page (wide layout).
func (h *Handler) appsRender(c echo.Context, status int, v view) error {
	v.CSSURL, v.Wide = h.site.CSSURL(), true
	return h.site.Render(c, status, h.pages[pageApps], v)
}
