package admin

import (
	"context"
	"errors"
	"fmt"
	"oauthd/data"
	"oauthd/data/ident"
	"oauthd/data/scope"
	"oauthd/keys/verify"
	"slices"
	"strconv"
	"strings"
	"time"
)

// parseScopes accepts names and comma/space-separated lists; unknown names
// are refused by name.
func parseScopes(items []string) ([]string, error) {
	got, err := scope.Parse(strings.Join(items, ","))
	if ue, ok := errors.AsType[*scope.UnknownError](err); ok {
		return nil, newError(data.ErrInvalid, unknownScopes(ue.Names))
	}
	if err != nil {
		return nil, newError(data.ErrInvalid, err.Error())
	}
	if len(got) == 0 {
		return nil, newError(data.ErrInvalid, "at least one scope is required; pass --scope PROFILE_READ (for example)")
	}
	return got, nil
}

// unknownScopes says which names are not scopes, with the close matches,
// and where the full list is.
func unknownScopes(names []string) string {
	parts := make([]string, 0, len(names))
	for _, n := range names {
		if s := scope.Suggest(n); len(s) > 0 {
			n += " (did you mean " + strings.Join(s, " or ") + "?)"
		}
		parts = append(parts, n)
	}
	return fmt.Sprintf("unknown scope %s; the scopes are in docs/SCOPES.md, "+
		"or in `oauthd clients create --help`", strings.Join(parts, ", "))
}

// CreateClient implements [Service.CreateClient]. The client starts pending.
func (l *Local) CreateClient(ctx context.Context, in NewClient) (CreatedClient, error) {
	ref := strings.TrimSpace(in.Owner)
	if in.OwnerID != 0 {
		ref = strconv.FormatInt(in.OwnerID, 10)
	}
	u, err := l.ResolveUser(ctx, ref)
	if err != nil {
		if errors.Is(err, data.ErrNotFound) {
			return CreatedClient{}, newError(data.ErrNotFound, fmt.Sprintf("no user %q (--owner takes a user's ID, email or username); add one with `oauthd users add`, `oauthd users list` shows them", ref))
		}
		return CreatedClient{}, fmt.Errorf("create client: %w", err)
	}
	scopes, err := parseScopes(in.Scopes)
	if err != nil {
		return CreatedClient{}, err
	}
	// What the operator reads is what the client is: a new name (settings
	// page or `clients create`) cannot drive a terminal or reorder text.
	if err := data.CheckDisplayText("name", strings.TrimSpace(in.Name)); err != nil {
		return CreatedClient{}, ruleError(err)
	}
	grantTypes, err := parseGrantTypes(in.GrantTypes)
	if err != nil {
		return CreatedClient{}, err
	}
	if slices.Equal(grantTypes, data.DefaultGrantTypes) {
		grantTypes = nil // the record of a default client stays as before
	}
	now := l.now().UTC()
	c := data.Client{
		ID: data.NewID("", 16), Name: strings.TrimSpace(in.Name), OwnerID: u.ID,
		Type: data.Confidential, RedirectURIs: in.RedirectURIs, Scopes: scopes, GrantTypes: grantTypes,
		Status: data.StatusPending, CreatedAt: now, UpdatedAt: now,
	}
	c.JWKS, c.JWKSURI = strings.TrimSpace(in.JWKS), strings.TrimSpace(in.JWKSURI)
	if c.JWKS != "" {
		if _, err := verify.ParseClientJWKS([]byte(c.JWKS)); err != nil {
			return CreatedClient{}, newError(data.ErrInvalid, "jwks: "+err.Error())
		}
	}
	var secret string
	switch {
	case in.Public:
		c.Type = data.Public
	case c.HasKeys():
		// private_key_jwt: no secret at all.
	default:
		var s data.ClientSecret
		secret, s = newSecret(now)
		c.Secrets = []data.ClientSecret{s}
	}
	if err := data.ValidateClient(c); err != nil {
		return CreatedClient{}, ruleError(err)
	}
	if err := l.store.CreateClient(ctx, c); err != nil {
		return CreatedClient{}, fmt.Errorf("create client: %w", ruleError(err))
	}
	l.audit(ctx, "client_created", "client_id", c.ID, "owner_id", c.OwnerID)
	out := CreatedClient{
		ClientID: c.ID, ClientSecret: secret, Status: string(c.Status), ClientType: string(c.Type),
		Name: c.Name, RedirectURIs: c.RedirectURIs, Scopes: c.Scopes, GrantTypes: slices.Clone(c.AllowedGrantTypes()),
		TokenEndpointAuthMethod: authMethod(c),
	}
	if out.RedirectURIs == nil {
		out.RedirectURIs = []string{}
	}
	if len(c.Secrets) > 0 {
		out.SecretID = c.Secrets[0].ID
	}
	return out, nil
}

// authMethod is how c authenticates at the token endpoint (RFC 7591 §2).
func authMethod(c data.Client) string {
	switch {
	case c.Type == data.Public:
		return "none"
	case c.HasKeys():
		return "private_key_jwt"
	}
	return "client_secret_basic"
}

// parseGrantTypes reads grant type names (each item may be a comma- or
// space-separated list): nil for none, else known names, each once.
func parseGrantTypes(items []string) ([]string, error) {
	var out []string
	for _, it := range items {
		for _, gt := range strings.FieldsFunc(it, func(r rune) bool { return r == ',' || r == ' ' }) {
			if gt == "device_code" {
				gt = data.GrantDeviceCode // the short name of RFC 8628's URN
			}
			if !data.KnownGrantType(gt) {
				return nil, newError(data.ErrInvalid, fmt.Sprintf("%q is not a grant type; use %s", gt, strings.Join(data.GrantTypes, ", ")))
			}
			if !slices.Contains(out, gt) {
				out = append(out, gt)
			}
		}
	}
	if len(items) > 0 && len(out) == 0 {
		return nil, newError(data.ErrInvalid, "give at least one grant type")
	}
	return out, nil
}

// ruleError turns the store's rule errors into operator sentences.
func ruleError(err error) error {
	if re, ok := errors.AsType[*data.RuleError](err); ok {
		return newError(data.ErrInvalid, fmt.Sprintf("%s: %s", re.Field, re.Reason))
	}
	return err
}

// ImportClients implements [Service.ImportClients]: all or nothing. Every
// record is checked (including against existing clients) before any is
// stored.
func (l *Local) ImportClients(ctx context.Context, in []LegacyClient) ([]string, error) {
	if len(in) == 0 {
		return nil, newError(data.ErrInvalid, "the file holds no clients; it must be a JSON array of {client_id, name, owner, redirect_uris, client_secret, client_type}")
	}
	now := l.now().UTC()
	cs := make([]data.Client, 0, len(in))
	for i, lc := range in {
		c := data.Client{
			ID: strings.TrimSpace(lc.ClientID), Name: strings.TrimSpace(lc.Name),
			Type: data.ClientType(lc.ClientType), RedirectURIs: lc.RedirectURIs, Legacy: true,
			Status: data.StatusApproved, CreatedAt: now, UpdatedAt: now,
		}
		if c.Type == "" {
			c.Type = data.Confidential
		}
		where := fmt.Sprintf("client %d (%q)", i+1, c.ID)
		if err := data.ValidateClientID(c.ID); err != nil {
			return nil, newError(data.ErrInvalid, fmt.Sprintf("%s: %v", where, ruleError(err)))
		}
		// The name is read on the consent page: the rule of clients create.
		if err := data.CheckDisplayText("name", c.Name); err != nil {
			return nil, newError(data.ErrInvalid, fmt.Sprintf("%s: %v", where, ruleError(err)))
		}
		// The owner is resolved once, to a user ID; one that names no
		// user leaves the client unclaimed (the operator sees it in
		// `clients list --owner unclaimed`), never matched by email later.
		switch owner := strings.TrimSpace(lc.Owner); {
		case owner == "":
			return nil, newError(data.ErrInvalid, where+": the owner is missing; give the email of the developer who owns the client")
		case ident.Check(owner) != nil:
			return nil, newError(data.ErrInvalid, where+": the owner holds an invisible or control character; fix it in the file")
		default:
			// By email or username only: a number in another system's
			// file is that system's user, never our user ID.
			u, err := l.store.GetUserByLogin(ctx, owner)
			switch {
			case err == nil:
				c.OwnerID = u.ID
			case errors.Is(err, data.ErrNotFound):
				c.UnclaimedOwner = owner
			default:
				return nil, fmt.Errorf("import clients: %w", err)
			}
		}
		switch {
		case c.Type == data.Confidential && lc.ClientSecret == "":
			return nil, newError(data.ErrInvalid, where+": a confidential client needs its client_secret")
		case c.Type == data.Public && lc.ClientSecret != "":
			return nil, newError(data.ErrInvalid, where+": a public client has no client_secret; remove it")
		case lc.ClientSecret != "":
			c.Secrets = []data.ClientSecret{{ID: data.NewID("cs_", 9), Hash: data.Hash(lc.ClientSecret), CreatedAt: now}}
		}
		if err := data.ValidateClient(c); err != nil {
			return nil, newError(data.ErrInvalid, fmt.Sprintf("%s: %v", where, ruleError(err)))
		}
		if slices.ContainsFunc(cs, func(o data.Client) bool { return o.ID == c.ID }) {
			return nil, newError(data.ErrExists, where+": the client ID appears twice in the file")
		}
		switch _, err := l.store.GetClient(ctx, c.ID); {
		case err == nil:
			return nil, newError(data.ErrExists, where+": a client with this ID already exists; remove it from the file")
		case !errors.Is(err, data.ErrNotFound):
			return nil, fmt.Errorf("import clients: %w", err)
		}
		cs = append(cs, c)
	}
	ids := make([]string, 0, len(cs))
	for _, c := range cs {
		if err := l.store.CreateClient(ctx, c); err != nil {
			return ids, fmt.Errorf("import clients: %s stored, then %q failed: %w", strings.Join(ids, ", "), c.ID, ruleError(err))
		}
		ids = append(ids, c.ID)
		l.audit(ctx, "client_imported", "client_id", c.ID)
	}
	return ids, nil
}

// ListClients implements [Service.ListClients].
func (l *Local) ListClients(ctx context.Context, status string) ([]ClientView, error) {
	switch data.ClientStatus(status) {
	case "", data.StatusPending, data.StatusApproved, data.StatusRejected:
	default:
		return nil, newError(data.ErrInvalid, fmt.Sprintf("%q is not a status; use pending, approved or rejected", status))
	}
	// "pending" lists the clients under review and the approved ones with a
	// pending change: everything an administrator has to decide.
	filter := data.ClientStatus(status)
	if filter == data.StatusPending {
		filter = ""
	}
	cs, err := l.store.ListClients(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("list clients: %w", err)
	}
	// Each distinct owner is read once (not every user: the settings
	// pages list clients on every visit).
	owners := map[int64]data.User{}
	for _, c := range cs {
		if _, done := owners[c.OwnerID]; done || c.OwnerID == 0 {
			continue
		}
		u, err := l.store.GetUser(ctx, c.OwnerID)
		if err != nil && !errors.Is(err, data.ErrNotFound) {
			return nil, fmt.Errorf("list clients: owner of %q: %w", c.ID, err)
		}
		owners[c.OwnerID] = u
	}
	out := make([]ClientView, 0, len(cs))
	for _, c := range cs {
		if status == string(data.StatusPending) && c.Status != data.StatusPending && c.Pending == nil {
			continue
		}
		out = append(out, l.clientView(c, owners))
	}
	return out, nil
}

// ShowClient implements [Service.ShowClient].
func (l *Local) ShowClient(ctx context.Context, id string) (ClientView, error) {
	c, err := l.getClient(ctx, id)
	if err != nil {
		return ClientView{}, err
	}
	return l.viewOne(ctx, c)
}

// viewOne is [Local.clientView] of one client, with its owner read.
func (l *Local) viewOne(ctx context.Context, c data.Client) (ClientView, error) {
	owners := map[int64]data.User{}
	if c.OwnerID != 0 {
		u, err := l.store.GetUser(ctx, c.OwnerID)
		if err != nil && !errors.Is(err, data.ErrNotFound) {
			return ClientView{}, fmt.Errorf("client %q: owner: %w", c.ID, err)
		}
		owners[u.ID] = u
	}
	return l.clientView(c, owners), nil
}

func (l *Local) getClient(ctx context.Context, id string) (data.Client, error) {
	c, err := l.store.GetClient(ctx, id)
	if errors.Is(err, data.ErrNotFound) {
		return data.Client{}, notFound(id)
	}
	if err != nil {
		return data.Client{}, fmt.Errorf("get client %q: %w", id, err)
	}
	return c, nil
}

func notFound(id string) error {
	return newError(data.ErrNotFound, fmt.Sprintf("no client with ID %q; list them with `oauthd clients list`", id))
}

// clientView is c as the operator sees it; owners holds (at least) c's
// owner, whose current email it shows.
func (l *Local) clientView(c data.Client, owners map[int64]data.User) ClientView {
	v := ClientView{
		ClientID: c.ID, Name: c.Name, OwnerID: c.OwnerID, Owner: owners[c.OwnerID].Email, UnclaimedOwner: c.UnclaimedOwner, AgentHost: c.MetadataHost,
		ClientType: string(c.Type), Status: string(c.Status),
		RejectReason: c.RejectReason, RedirectURIs: c.RedirectURIs, Scopes: c.Scopes, Legacy: c.Legacy,
		GrantTypes: slices.Clone(c.AllowedGrantTypes()), TokenEndpointAuthMethod: authMethod(c), JWKSURI: c.JWKSURI, JWKS: c.JWKS,
		Secrets: secretViews(c.Secrets), CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		DPoPBoundAccessTokens: c.DPoPBoundAccessTokens, RequirePAR: c.RequirePAR,
	}
	if v.RedirectURIs == nil {
		v.RedirectURIs = []string{}
	}
	v.PostLogoutRedirectURIs = append([]string{}, c.PostLogoutRedirectURIs...)
	if v.Scopes == nil {
		v.Scopes = []string{}
	}
	v.AllowedOrigins = append([]string{}, data.AllowedOrigins(c)...)
	if c.Legacy {
		counts := l.requestCounts(c)
		safe := counts.WithoutScope == 0
		v.AuthorizationRequests, v.MigrationSafe = &counts, &safe
	}
	v.Revision = clientRevision(c)
	v.PendingChange = changeView(c, c.Pending)
	v.RejectedChange = changeView(c, c.RejectedChange)
	return v
}

// requestCounts counts a legacy client's authorization requests of the
// last [data.MaxUsageDays] days; migration is safe when none came without
// a scope parameter.
func (l *Local) requestCounts(c data.Client) RequestCounts {
	counts := RequestCounts{Days: data.MaxUsageDays}
	oldest := l.now().UTC().AddDate(0, 0, -(data.MaxUsageDays - 1)).Format(time.DateOnly)
	for _, d := range c.Usage {
		if d.Day >= oldest {
			counts.WithScope += d.WithScope
			counts.WithoutScope += d.WithoutScope
		}
	}
	return counts
}

// update runs fn on the stored client inside the store's transaction and
// maps the store's errors to operator sentences.
func (l *Local) update(ctx context.Context, id string, fn func(data.Client) (data.Client, error)) (data.Client, error) {
	c, err := l.store.UpdateClient(ctx, id, func(c data.Client) (data.Client, error) {
		c, err := fn(c)
		c.Pending = tidyPending(c)
		c.UpdatedAt = l.now().UTC()
		return c, err
	})
	var op *opError
	switch {
	case err == nil:
		return c, nil
	case errors.As(err, &op):
		return data.Client{}, op
	case errors.Is(err, data.ErrNotFound):
		return data.Client{}, notFound(id)
	case errors.Is(err, data.ErrTooManySecrets):
		return data.Client{}, tooMany(id)
	case errors.Is(err, data.ErrInvalid):
		return data.Client{}, ruleError(err)
	}
	return data.Client{}, fmt.Errorf("update client %q: %w", id, err)
}

func tooMany(id string) error {
	return newError(data.ErrTooManySecrets, fmt.Sprintf("client %s already has %d active secrets; revoke one first with `oauthd clients secrets revoke %s SECRET_ID`", id, data.MaxActiveSecrets, id))
}
