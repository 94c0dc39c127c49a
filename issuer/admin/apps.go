package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"oauthd/data"
	"oauthd/data/ident"
	"oauthd/data/scope"
)

// Connected apps: what a user allowed, and taking it back. The settings
// page /settings/apps and `oauthd users apps` both read and change them
// here.

// App statuses in an [AppView]. A pending client never has a grant, and is
// never listed.
const (
	AppApproved = "approved"
	AppRejected = "rejected" // the client was rejected; its grants are revoked
	AppDeleted  = "deleted"  // no client record any more
)

// AppView is one app a user allowed and has not removed: a client with
// the user's consent grant, or with a live refresh-token family of the
// user's, or both.
type AppView struct {
	ClientID  string `json:"client_id"`
	Name      string `json:"name"`      // "" for a deleted client
	Developer string `json:"developer"` // the client's owner, as the consent page shows it
	// AgentHost is, for an AI assistant (a client ID metadata document),
	// the host that vouches for it; its Developer reads "AI assistant
	// from HOST".
	AgentHost string `json:"agent_host,omitempty"`
	Status    string `json:"status"` // AppApproved, AppRejected or AppDeleted
	// Scopes are what the app can use now: the scopes of its live grants
	// (narrowed with the client's), or, with none live, those the user
	// consented to; in the catalogue's order.
	Scopes []string `json:"scopes"`
	// Unrestricted: a legacy grant, full access to the account.
	Unrestricted bool `json:"unrestricted"`
	// FirstAllowedAt is when the user first allowed the app (the consent
	// grant's creation, or the oldest live family's).
	FirstAllowedAt time.Time `json:"first_allowed_at"`
	// LastUsedAt is when a token was last issued from one of the user's
	// grants to the app (a code exchange or a refresh: the latest family
	// RotatedAt); absent when no grant is live.
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	// GrantIDs are the live grants (refresh-token families; the grant_id
	// of their access tokens).
	GrantIDs []string `json:"grant_ids"`
}

// RemovedApp is what [Service.RevokeUserApp] removed.
type RemovedApp struct {
	UserID   int64  `json:"user_id"`
	ClientID string `json:"client_id"`
	Name     string `json:"name"` // "" for a deleted client
	// RevokedGrantIDs are the grants revoked; each is in the revoked-grants
	// feed from now on.
	RevokedGrantIDs  []string `json:"revoked_grant_ids"`
	ConsentForgotten bool     `json:"consent_forgotten"`
	CodesDeleted     int      `json:"codes_deleted"`
}

// ListUserApps implements [Service.ListUserApps]: the apps are ordered by
// name (then client ID).
func (l *Local) ListUserApps(ctx context.Context, user string) ([]AppView, error) {
	u, err := l.ResolveUser(ctx, user)
	if err != nil {
		return nil, err
	}
	grants, err := l.store.ListGrants(ctx, u.ID)
	if err != nil {
		return nil, fmt.Errorf("list the apps of user %d: %w", u.ID, err)
	}
	fams, err := l.store.ListUserFamilies(ctx, u.ID)
	if err != nil {
		return nil, fmt.Errorf("list the apps of user %d: %w", u.ID, err)
	}
	byClient := map[string]*appParts{}
	part := func(id string) *appParts {
		p := byClient[id]
		if p == nil {
			p = &appParts{}
			byClient[id] = p
		}
		return p
	}
	for _, g := range grants {
		part(g.ClientID).grant = &g
	}
	for _, f := range fams {
		p := part(f.ClientID)
		p.fams = append(p.fams, f)
	}
	out := []AppView{}
	for id, p := range byClient {
		c, err := l.store.GetClient(ctx, id)
		switch {
		case errors.Is(err, data.ErrNotFound):
			c = data.Client{ID: id}
		case err != nil:
			return nil, fmt.Errorf("list the apps of user %d: %w", u.ID, err)
		case c.Status == data.StatusPending:
			continue // cannot have been allowed; never shown
		}
		if p.grant != nil && len(p.fams) == 0 && err == nil && c.Status == data.StatusApproved {
			if _, ok := data.ConsentHeld(*p.grant, c); !ok {
				continue // a consent from before a rejection: allows nothing
			}
		}
		out = append(out, p.view(c, l.developer(ctx, c), err != nil))
	}
	slices.SortFunc(out, func(a, b AppView) int {
		return cmp.Or(cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)), cmp.Compare(a.ClientID, b.ClientID))
	})
	return out, nil
}

// appParts is what the store holds of one app of a user.
type appParts struct {
	grant *data.Grant
	fams  []data.Family
}

// view makes the AppView of the parts, for client c (deleted: no record)
// whose developer is shown as developer.
func (p *appParts) view(c data.Client, developer string, deleted bool) AppView {
	v := AppView{ClientID: c.ID, Name: c.Name, Developer: developer, AgentHost: c.MetadataHost, Status: string(c.Status), GrantIDs: []string{}}
	if deleted {
		v.Status = AppDeleted
	}
	var scopes []string
	if p.grant != nil {
		v.FirstAllowedAt = p.grant.CreatedAt
	}
	for _, f := range p.fams {
		v.GrantIDs = append(v.GrantIDs, f.ID)
		if v.FirstAllowedAt.IsZero() || f.CreatedAt.Before(v.FirstAllowedAt) {
			v.FirstAllowedAt = f.CreatedAt
		}
		last := f.RotatedAt
		if last.IsZero() {
			last = f.CreatedAt
		}
		if v.LastUsedAt == nil || last.After(*v.LastUsedAt) {
			v.LastUsedAt = &last
		}
		v.Unrestricted = v.Unrestricted || f.Unrestricted
		scopes = append(scopes, f.Scopes...)
	}
	if len(p.fams) == 0 && p.grant != nil {
		// What of the consent still holds (data.ConsentHeld); of a
		// rejected or deleted client, what the user consented to.
		scopes = p.grant.Scopes
		if held, ok := data.ConsentHeld(*p.grant, c); ok {
			scopes = held
		}
		v.Unrestricted = c.Legacy
	}
	v.Scopes = catalogueOrder(scopes)
	if v.LastUsedAt != nil {
		t := v.LastUsedAt.UTC()
		v.LastUsedAt = &t
	}
	v.FirstAllowedAt = v.FirstAllowedAt.UTC()
	return v
}

// catalogueOrder returns the known scopes among names, once each, in the
// catalogue's order.
func catalogueOrder(names []string) []string {
	out := []string{}
	for _, s := range scope.All() {
		if slices.Contains(names, s.Name) {
			out = append(out, s.Name)
		}
	}
	return out
}

// RevokeUserApp implements [Service.RevokeUserApp]. It is idempotent: an
// existing client with nothing left to remove succeeds with nothing
// removed; a client ID that names no client and of which the user holds
// nothing is ErrNotFound.
func (l *Local) RevokeUserApp(ctx context.Context, user, clientID string) (RemovedApp, error) {
	u, err := l.ResolveUser(ctx, user)
	if err != nil {
		return RemovedApp{}, err
	}
	clientID = strings.TrimSpace(clientID)
	if clientID == "" || len(clientID) > 200 {
		return RemovedApp{}, newError(data.ErrInvalid, "name the app by its client ID; `oauthd users apps USER` lists them")
	}
	r, err := l.store.RevokeApp(ctx, u.ID, clientID)
	if err != nil {
		return RemovedApp{}, fmt.Errorf("remove app %s of user %d: %w", clientID, u.ID, err)
	}
	out := RemovedApp{UserID: u.ID, ClientID: clientID, RevokedGrantIDs: r.Families, ConsentForgotten: r.Grant, CodesDeleted: r.Codes}
	if out.RevokedGrantIDs == nil {
		out.RevokedGrantIDs = []string{}
	}
	c, err := l.store.GetClient(ctx, clientID)
	switch {
	case errors.Is(err, data.ErrNotFound):
		if len(r.Families) == 0 && !r.Grant && r.Codes == 0 {
			return RemovedApp{}, newError(data.ErrNotFound, fmt.Sprintf("user %d has no app %q; `oauthd users apps %d` lists their apps", u.ID, clientID, u.ID))
		}
	case err != nil:
		// Removed already; only the name is missing.
		l.log.WarnContext(ctx, "remove app: read the client's name", "client_id", clientID, "err", err)
	default:
		out.Name = c.Name
	}
	l.audit(ctx, "app_access_removed", "user_id", u.ID, "client_id", clientID,
		"grants_revoked", len(r.Families), "grant_ids", strings.Join(r.Families, ","),
		"consent_forgotten", r.Grant, "codes_deleted", r.Codes)
	return out, nil
}

// developer is what an app's entry shows as its developer: the owner's
// current email (ownership is by ID, the email may have changed since), or
// the owner an unclaimed client was imported with; "" when unknown.
func (l *Local) developer(ctx context.Context, c data.Client) string {
	if c.MetadataHost != "" {
		return "AI assistant from " + c.MetadataHost
	}
	if c.OwnerID == 0 {
		return ident.Shown(c.UnclaimedOwner)
	}
	u, err := l.store.GetUser(ctx, c.OwnerID)
	if err != nil {
		return ""
	}
	return ident.Shown(u.Email)
}
