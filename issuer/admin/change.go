package admin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"oauthd/data"
	"oauthd/data/scope"
)

// The review of widening changes (docs/DESIGN.md, "What each decision
// reaches, and when"): an owner's edit of an approved client applies at
// once what narrows the client (a scope or redirect URI removed, a legacy
// client migrated to scopes) and keeps what widens it (a scope or redirect
// URI added, the other client type) in data.Client.Pending, which only
// ApproveClient makes part of the client. The authorization and token
// endpoints read the approved settings only, so a pending change has no
// effect anywhere until it is approved. An edit while a change is pending
// replaces it (the owner states the settings they want, relative to the
// approved ones); a client that is not approved (under review, or
// rejected) takes its owner's edits directly, since an administrator
// reviews it as a whole before it can be used.

// EditClient implements [Service.EditClient].
func (l *Local) EditClient(ctx context.Context, id string, e ClientEdit) (EditResult, error) {
	edit, err := checkEdit(e)
	if err != nil {
		return EditResult{}, err
	}
	now := l.now().UTC()
	by := l.actorOf(ctx).String()
	// A public client that becomes confidential needs a secret; it is made
	// here, outside the store's update function, which must be pure.
	secret, sec := newSecret(now)
	var before data.Client
	c, err := l.update(ctx, id, func(c data.Client) (data.Client, error) {
		before = c
		if edit.scopes != nil && c.Legacy && !e.Force {
			if counts := l.requestCounts(c); counts.WithoutScope > 0 {
				return c, errUnsafeMigration(c, counts, "confirm")
			}
		}
		want := edit.wanted(c, sec)
		if c.Status != data.StatusApproved {
			return applyDirectly(c, want), nil
		}
		return splitEdit(c, want, by, now)
	})
	if err != nil {
		return EditResult{}, err
	}
	cv, err := l.viewOne(ctx, c)
	if err != nil {
		return EditResult{}, err
	}
	res := EditResult{Client: cv, Pending: c.Pending != nil, Applied: !sameSettings(before, c)}
	if slices.ContainsFunc(c.WithPending().Secrets, func(s data.ClientSecret) bool { return s.ID == sec.ID }) {
		res.NewSecret = &CreatedSecret{SecretID: sec.ID, ClientSecret: secret}
	}
	l.auditEdit(ctx, before, c)
	return res, nil
}

// checkedEdit is a [ClientEdit] whose scopes, client type and grant types
// are checked; nil (or "") leaves the setting as it is.
type checkedEdit struct {
	ClientEdit
	scopes     []string
	typ        data.ClientType
	grantTypes []string
}

// checkEdit checks e: known scopes, a client type, known grant types, at
// least one redirect URI when it gives them, and something to change.
func checkEdit(e ClientEdit) (checkedEdit, error) {
	edit := checkedEdit{ClientEdit: e}
	if e.Scopes != nil {
		var err error
		if edit.scopes, err = parseScopes(e.Scopes); err != nil {
			return edit, err
		}
	}
	switch t := data.ClientType(e.ClientType); t {
	case "":
	case data.Confidential, data.Public:
		edit.typ = t
	default:
		return edit, newError(data.ErrInvalid, fmt.Sprintf("%q is not a client type; use confidential or public", e.ClientType))
	}
	if e.RedirectURIs != nil && len(e.RedirectURIs) == 0 {
		return edit, newError(data.ErrInvalid, "at least one redirect URI is required")
	}
	var err error
	if edit.grantTypes, err = parseGrantTypes(e.GrantTypes); err != nil {
		return edit, err
	}
	if edit.scopes == nil && e.RedirectURIs == nil && e.PostLogoutRedirectURIs == nil && edit.grantTypes == nil && edit.typ == "" && e.DPoPBoundAccessTokens == nil && e.RequirePAR == nil {
		return edit, newError(data.ErrInvalid, "the edit changes nothing; give scopes, redirect URIs, post-logout redirect URIs, grant types, a client type or a protection")
	}
	return edit, nil
}

// wanted returns the settings the owner asks for with e, starting from
// what they asked for last (the approved settings of c and its pending
// change). A client that becomes confidential gets the secret sec; one
// that goes back to its approved type keeps its approved secrets.
func (e checkedEdit) wanted(c data.Client, sec data.ClientSecret) data.Client {
	want := c.WithPending()
	if e.scopes != nil {
		want.Scopes, want.Legacy = e.scopes, false
	}
	if e.RedirectURIs != nil {
		want.RedirectURIs = e.RedirectURIs
	}
	if e.PostLogoutRedirectURIs != nil {
		want.PostLogoutRedirectURIs = e.PostLogoutRedirectURIs
		if len(want.PostLogoutRedirectURIs) == 0 {
			want.PostLogoutRedirectURIs = nil
		}
	}
	if e.grantTypes != nil {
		want.GrantTypes = e.grantTypes
	}
	if e.typ != "" && e.typ != want.Type {
		want.Type, want.Secrets = e.typ, nil
		if e.typ == data.Confidential {
			want.Secrets = []data.ClientSecret{sec}
		}
	}
	if e.typ != "" && e.typ == c.Type {
		// Back to the approved type: the approved secrets stay.
		want.Type, want.Secrets = c.Type, c.Secrets
	}
	if e.DPoPBoundAccessTokens != nil {
		want.DPoPBoundAccessTokens = *e.DPoPBoundAccessTokens
	}
	if e.RequirePAR != nil {
		want.RequirePAR = *e.RequirePAR
	}
	return want
}

// applyDirectly makes want the client's settings: the edit of a client
// that is not approved.
func applyDirectly(c, want data.Client) data.Client {
	if c.Legacy && !want.Legacy {
		c.Usage = nil
	}
	c.Scopes, c.Legacy, c.RedirectURIs = want.Scopes, want.Legacy, want.RedirectURIs
	c.PostLogoutRedirectURIs = want.PostLogoutRedirectURIs
	c.Type, c.Secrets = want.Type, want.Secrets
	c.GrantTypes = want.GrantTypes
	c.DPoPBoundAccessTokens, c.RequirePAR = want.DPoPBoundAccessTokens, want.RequirePAR
	c.Pending, c.RejectedChange = nil, nil
	return c
}

// splitEdit applies to the approved client c the part of want that
// narrows it and keeps the part that widens it as c.Pending.
func splitEdit(c, want data.Client, by string, now time.Time) (data.Client, error) {
	old := c.Pending
	p := &data.ClientChange{ProposedBy: by, ProposedAt: now}
	if c.Legacy && !want.Legacy {
		// The migration narrows an unrestricted client: it applies at once.
		c.Scopes, c.Legacy, c.Usage = want.Scopes, false, nil
	} else {
		kept := keep(c.Scopes, want.Scopes)
		if len(kept) == 0 && len(c.Scopes) > 0 {
			return c, newError(data.ErrInvalid, fmt.Sprintf("keep at least one of the approved scopes (%s) until an administrator has approved the new ones: "+
				"the client must keep working meanwhile; remove the old ones afterwards", strings.Join(c.Scopes, ", ")))
		}
		p.AddScopes = without(want.Scopes, c.Scopes)
		c.Scopes = kept
	}
	kept := keep(c.RedirectURIs, want.RedirectURIs)
	if len(kept) == 0 && len(c.RedirectURIs) > 0 {
		return c, newError(data.ErrInvalid, fmt.Sprintf("keep at least one of the approved redirect URIs (%s) until an administrator has approved the new ones: "+
			"the client must keep working meanwhile; remove the old ones afterwards", strings.Join(c.RedirectURIs, ", ")))
	}
	p.AddRedirectURIs = without(want.RedirectURIs, c.RedirectURIs)
	c.RedirectURIs = kept
	// Grant types are reviewed like scopes: one removed applies at once,
	// a new one waits.
	if want.GrantTypes != nil || c.GrantTypes != nil {
		have := c.AllowedGrantTypes()
		p.AddGrantTypes = without(want.AllowedGrantTypes(), have)
		c.GrantTypes = keep(have, want.AllowedGrantTypes())
		if len(c.GrantTypes) == 0 {
			return c, newError(data.ErrInvalid, fmt.Sprintf("keep at least one of the approved grant types (%s) until an administrator has approved the new ones", strings.Join(have, ", ")))
		}
		if slices.Equal(c.GrantTypes, data.DefaultGrantTypes) {
			c.GrantTypes = nil
		}
	}
	// Post-logout redirect URIs are reviewed like redirect URIs: removing
	// one applies at once, a new one waits (none at all is allowed).
	p.AddPostLogoutRedirectURIs = without(want.PostLogoutRedirectURIs, c.PostLogoutRedirectURIs)
	c.PostLogoutRedirectURIs = keep(c.PostLogoutRedirectURIs, want.PostLogoutRedirectURIs)
	// A protection turned on narrows: at once. Turned off widens: review.
	if want.DPoPBoundAccessTokens {
		c.DPoPBoundAccessTokens = true
	}
	p.DropDPoPBound = c.DPoPBoundAccessTokens && !want.DPoPBoundAccessTokens
	if want.RequirePAR {
		c.RequirePAR = true
	}
	p.DropRequirePAR = c.RequirePAR && !want.RequirePAR
	if want.Type != c.Type {
		p.Type = want.Type
		if want.Type == data.Confidential && len(want.Secrets) > 0 {
			s := want.Secrets[0]
			p.Secret = &s
		}
	}
	c.Pending = tidyPending(data.Client{Scopes: c.Scopes, RedirectURIs: c.RedirectURIs, PostLogoutRedirectURIs: c.PostLogoutRedirectURIs, GrantTypes: c.GrantTypes, Type: c.Type,
		DPoPBoundAccessTokens: c.DPoPBoundAccessTokens, RequirePAR: c.RequirePAR, Pending: p})
	if c.Pending != nil && old != nil && sameChange(old, c.Pending) {
		c.Pending = old // nothing new to review: keep who asked and when
	}
	c.RejectedChange = nil
	return c, nil
}

// keep returns the items of have that are in want, in have's order.
func keep(have, want []string) []string {
	var out []string
	for _, s := range have {
		if slices.Contains(want, s) {
			out = append(out, s)
		}
	}
	return out
}

// without returns the items of want that are not in have, in want's order.
func without(want, have []string) []string {
	var out []string
	for _, s := range want {
		if !slices.Contains(have, s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// tidyPending returns c.Pending without what c already has (after an
// operator's change, say), or nil when nothing is left to review.
func tidyPending(c data.Client) *data.ClientChange {
	if c.Pending == nil {
		return nil
	}
	p := c.Pending.Clone()
	p.AddScopes = without(p.AddScopes, c.Scopes)
	p.AddRedirectURIs = without(p.AddRedirectURIs, c.RedirectURIs)
	p.AddPostLogoutRedirectURIs = without(p.AddPostLogoutRedirectURIs, c.PostLogoutRedirectURIs)
	p.AddGrantTypes = without(p.AddGrantTypes, c.AllowedGrantTypes())
	if p.Type == c.Type {
		p.Type, p.Secret = "", nil
	}
	p.DropDPoPBound = p.DropDPoPBound && c.DPoPBoundAccessTokens
	p.DropRequirePAR = p.DropRequirePAR && c.RequirePAR
	if len(p.AddScopes) == 0 && len(p.AddRedirectURIs) == 0 && len(p.AddPostLogoutRedirectURIs) == 0 && len(p.AddGrantTypes) == 0 && p.Type == "" && !p.DropDPoPBound && !p.DropRequirePAR {
		return nil
	}
	return p
}

func sameChange(a, b *data.ClientChange) bool {
	secretID := func(p *data.ClientChange) string {
		if p.Secret == nil {
			return ""
		}
		return p.Secret.ID
	}
	return slices.Equal(a.AddScopes, b.AddScopes) && slices.Equal(a.AddRedirectURIs, b.AddRedirectURIs) &&
		slices.Equal(a.AddPostLogoutRedirectURIs, b.AddPostLogoutRedirectURIs) && slices.Equal(a.AddGrantTypes, b.AddGrantTypes) && a.Type == b.Type && secretID(a) == secretID(b) &&
		a.DropDPoPBound == b.DropDPoPBound && a.DropRequirePAR == b.DropRequirePAR
}

// sameSettings reports whether a and b have the same settings in force.
func sameSettings(a, b data.Client) bool {
	return slices.Equal(a.Scopes, b.Scopes) && slices.Equal(a.RedirectURIs, b.RedirectURIs) &&
		slices.Equal(a.PostLogoutRedirectURIs, b.PostLogoutRedirectURIs) && slices.Equal(a.GrantTypes, b.GrantTypes) && a.Type == b.Type && a.Legacy == b.Legacy &&
		a.DPoPBoundAccessTokens == b.DPoPBoundAccessTokens && a.RequirePAR == b.RequirePAR
}

// auditEdit writes the audit records of an owner's edit: what applied at
// once, and what now waits for review (or no longer does).
func (l *Local) auditEdit(ctx context.Context, before, after data.Client) {
	if !sameSettings(before, after) {
		ev := "client_narrowed"
		switch {
		case before.Status != data.StatusApproved:
			ev = "client_edited" // under review: applied as asked
		case before.Legacy && !after.Legacy:
			ev = "client_migrated"
		}
		l.audit(ctx, ev, "client_id", after.ID,
			"removed_scopes", strings.Join(without(before.Scopes, after.Scopes), " "),
			"added_scopes", strings.Join(without(after.Scopes, before.Scopes), " "),
			"removed_redirect_uris", strings.Join(without(before.RedirectURIs, after.RedirectURIs), " "),
			"added_redirect_uris", strings.Join(without(after.RedirectURIs, before.RedirectURIs), " "),
			"removed_post_logout_redirect_uris", strings.Join(without(before.PostLogoutRedirectURIs, after.PostLogoutRedirectURIs), " "),
			"removed_grant_types", strings.Join(without(before.AllowedGrantTypes(), after.AllowedGrantTypes()), " "),
			"client_type", string(after.Type),
			"dpop_bound_access_tokens", after.DPoPBoundAccessTokens,
			"require_pushed_authorization_requests", after.RequirePAR)
	}
	switch {
	case after.Pending != nil && (before.Pending == nil || !sameChange(before.Pending, after.Pending)):
		l.audit(ctx, "client_change_proposed", append([]any{"client_id", after.ID}, changeAttrs(after.Pending)...)...)
	case after.Pending == nil && before.Pending != nil && before.Status == data.StatusApproved:
		l.audit(ctx, "client_change_withdrawn", append([]any{"client_id", after.ID}, changeAttrs(before.Pending)...)...)
	}
}

// changeAttrs are the audit attributes of a pending change.
func changeAttrs(p *data.ClientChange) []any {
	return []any{"add_scopes", scope.Join(p.AddScopes), "add_redirect_uris", strings.Join(p.AddRedirectURIs, " "),
		"add_post_logout_redirect_uris", strings.Join(p.AddPostLogoutRedirectURIs, " "),
		"add_grant_types", strings.Join(p.AddGrantTypes, " "),
		"new_client_type", string(p.Type), "drop_dpop_bound_access_tokens", p.DropDPoPBound,
		"drop_require_pushed_authorization_requests", p.DropRequirePAR,
		"proposed_by", p.ProposedBy, "proposed_at", p.ProposedAt}
}

// changeView shows the change p of client c (nil for nil).
func changeView(c data.Client, p *data.ClientChange) *ChangeView {
	if p == nil {
		return nil
	}
	next := c
	next.Pending = p
	next = next.WithPending()
	v := &ChangeView{
		AddScopes: p.AddScopes, AddRedirectURIs: p.AddRedirectURIs, AddPostLogoutRedirectURIs: p.AddPostLogoutRedirectURIs, ClientType: string(p.Type),
		AddGrantTypes: p.AddGrantTypes, GrantTypes: slices.Clone(next.AllowedGrantTypes()),
		DropDPoPBoundAccessTokens: p.DropDPoPBound, DropRequirePAR: p.DropRequirePAR,
		Scopes: next.Scopes, RedirectURIs: next.RedirectURIs, PostLogoutRedirectURIs: next.PostLogoutRedirectURIs, ResultType: string(next.Type),
		ProposedBy: p.ProposedBy, ProposedAt: p.ProposedAt, RejectReason: p.RejectReason,
		AllowedOrigins: data.AllowedOrigins(next),
	}
	for _, l := range []*[]string{&v.AddScopes, &v.AddRedirectURIs, &v.Scopes, &v.RedirectURIs, &v.PostLogoutRedirectURIs, &v.AllowedOrigins} {
		if *l == nil {
			*l = []string{}
		}
	}
	return v
}

// clientRevision is a short digest of what a review decides on: the
// client's type, scopes, redirect URIs, status and pending change. An
// owner's edit changes it; usage counts and secret use do not.
func clientRevision(c data.Client) string {
	var p struct {
		S, U   []string
		T      data.ClientType
		DD, DP bool     `json:",omitempty"`
		L      []string `json:",omitempty"`
	}
	if c.Pending != nil {
		p.S, p.U, p.T = c.Pending.AddScopes, c.Pending.AddRedirectURIs, c.Pending.Type
		p.DD, p.DP = c.Pending.DropDPoPBound, c.Pending.DropRequirePAR
		p.L = c.Pending.AddPostLogoutRedirectURIs
	}
	parts := []any{c.Type, c.Legacy, c.Status, c.Scopes, c.RedirectURIs, p}
	if c.DPoPBoundAccessTokens || c.RequirePAR {
		parts = append(parts, c.DPoPBoundAccessTokens, c.RequirePAR)
	}
	if len(c.PostLogoutRedirectURIs) > 0 {
		// Only when there are some: the revisions of other clients stay.
		parts = append(parts, c.PostLogoutRedirectURIs)
	}
	if len(c.GrantTypes) > 0 || (c.Pending != nil && len(c.Pending.AddGrantTypes) > 0) {
		var add []string
		if c.Pending != nil {
			add = c.Pending.AddGrantTypes
		}
		parts = append(parts, c.GrantTypes, add)
	}
	b, _ := json.Marshal(parts)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:6])
}
