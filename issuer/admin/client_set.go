package admin

import (
	"context"
	"fmt"
	"oauthd/data"
	"oauthd/data/scope"
	"strings"
)

// SetScopes implements [Service.SetScopes]. On a legacy client this is the
// migration to a scoped client, refused while it is not migration-safe
// (see [Local.ForceScopes]).
func (l *Local) SetScopes(ctx context.Context, id string, scopes []string) (ClientView, error) {
	return l.setScopes(ctx, id, scopes, false)
}

// ForceScopes implements [Service.ForceScopes]: [Local.SetScopes], also on
// a legacy client whose recent authorization requests came without scope.
func (l *Local) ForceScopes(ctx context.Context, id string, scopes []string) (ClientView, error) {
	return l.setScopes(ctx, id, scopes, true)
}

// errUnsafeMigration is the refusal to migrate a legacy client while its
// authorization URL still comes without a scope parameter.
func errUnsafeMigration(c data.Client, counts RequestCounts, force string) error {
	return newError(data.ErrConflict, fmt.Sprintf("client %s is not safe to migrate: %d of its authorization requests of the last %d days "+
		"came without a scope parameter, and once scopes are saved such requests fail. "+
		"Add scope to the client's authorization URL, wait until `oauthd clients show %s` says migration_safe: true, "+
		"or %s to migrate now", c.ID, counts.WithoutScope, counts.Days, c.ID, force))
}

func (l *Local) setScopes(ctx context.Context, id string, scopes []string, force bool) (ClientView, error) {
	parsed, err := parseScopes(scopes)
	if err != nil {
		return ClientView{}, err
	}
	var migrated bool
	c, err := l.update(ctx, id, func(c data.Client) (data.Client, error) {
		migrated = c.Legacy
		if counts := l.requestCounts(c); c.Legacy && !force && counts.WithoutScope > 0 {
			return c, errUnsafeMigration(c, counts, "pass --force")
		}
		c.Scopes, c.Legacy, c.Usage = parsed, false, nil
		return c, nil
	})
	if err != nil {
		return ClientView{}, err
	}
	if migrated {
		l.audit(ctx, "client_migrated", "client_id", id, "scopes", scope.Join(parsed), "forced", force)
	} else {
		l.audit(ctx, "client_scopes_set", "client_id", id, "scopes", scope.Join(parsed))
	}
	return l.viewOne(ctx, c)
}

// SetRedirectURIs implements [Service.SetRedirectURIs].
func (l *Local) SetRedirectURIs(ctx context.Context, id string, uris []string) (ClientView, error) {
	c, err := l.update(ctx, id, func(c data.Client) (data.Client, error) {
		c.RedirectURIs = uris
		return c, nil
	})
	if err != nil {
		return ClientView{}, err
	}
	l.audit(ctx, "client_redirect_uris_set", "client_id", id)
	return l.viewOne(ctx, c)
}

// SetPostLogoutRedirectURIs implements [Service.SetPostLogoutRedirectURIs]:
// the operator's change applies at once (the operator is the reviewer); a
// pending change loses what it already grants.
func (l *Local) SetPostLogoutRedirectURIs(ctx context.Context, id string, uris []string) (ClientView, error) {
	if len(uris) == 0 {
		uris = nil
	}
	c, err := l.update(ctx, id, func(c data.Client) (data.Client, error) {
		c.PostLogoutRedirectURIs = uris
		c.Pending = tidyPending(c)
		return c, nil
	})
	if err != nil {
		return ClientView{}, err
	}
	l.audit(ctx, "client_post_logout_redirect_uris_set", "client_id", id, "post_logout_redirect_uris", strings.Join(uris, " "))
	return l.viewOne(ctx, c)
}

// SetClientOptions implements [Service.SetClientOptions].
func (l *Local) SetClientOptions(ctx context.Context, id string, o ClientOptions) (ClientView, error) {
	if o.DPoPBoundAccessTokens == nil && o.RequirePAR == nil && o.Owner == nil {
		return ClientView{}, newError(data.ErrInvalid, "nothing to set; give --dpop-bound-access-tokens, --require-par or --owner")
	}
	var owner int64
	if o.Owner != nil {
		u, err := l.ResolveUser(ctx, *o.Owner)
		if err != nil {
			return ClientView{}, err
		}
		owner = u.ID
	}
	c, err := l.update(ctx, id, func(c data.Client) (data.Client, error) {
		if owner != 0 {
			c.OwnerID, c.UnclaimedOwner = owner, ""
		}
		if o.DPoPBoundAccessTokens != nil {
			c.DPoPBoundAccessTokens = *o.DPoPBoundAccessTokens
		}
		if o.RequirePAR != nil {
			c.RequirePAR = *o.RequirePAR
		}
		// A pending change may no longer have anything to turn off.
		c.Pending = tidyPending(c)
		return c, nil
	})
	if err != nil {
		return ClientView{}, err
	}
	l.audit(ctx, "client_options_set", "client_id", id,
		"dpop_bound_access_tokens", c.DPoPBoundAccessTokens, "require_pushed_authorization_requests", c.RequirePAR, "owner_id", c.OwnerID)
	return l.viewOne(ctx, c)
}
