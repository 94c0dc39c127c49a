package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"oauthd/data"
	"oauthd/data/password"
	"oauthd/data/scope"
)

// Store is the slice of [data.Store] the operator API uses: users,
// clients and the revocation of a client's grants; any data.Store is one.
type Store interface {
	CreateUser(ctx context.Context, u data.User) (data.User, error)
	CreateUsers(ctx context.Context, us []data.User) ([]data.User, error)
	GetUser(ctx context.Context, id int64) (data.User, error)
	GetUserByLogin(ctx context.Context, login string) (data.User, error)
	ListUsers(ctx context.Context) ([]data.User, error)
	UpdateUser(ctx context.Context, id int64, update func(data.User) (data.User, error)) (data.User, error)

	CreateClient(ctx context.Context, c data.Client) error
	GetClient(ctx context.Context, id string) (data.Client, error)
	ListClients(ctx context.Context, status data.ClientStatus) ([]data.Client, error)
	UpdateClient(ctx context.Context, id string, update func(data.Client) (data.Client, error)) (data.Client, error)

	ListFamilies(ctx context.Context, clientID string) ([]data.Family, error)
	DeleteFamily(ctx context.Context, id string) error
}

var _ Store = data.Store(nil)

// Local implements [Service] over a store and a key manager, in this process.
// Create it with [NewLocal].
type Local struct {
	store Store
	keys  KeyManager
	log   *slog.Logger
	now   func() time.Time
	actor Actor // who acts when the request's context names no one
}

var _ Service = (*Local)(nil)

// NewLocal returns a Local. km may be nil when no key operation will be
// called; logger nil means discard; now nil means time.Now.
func NewLocal(store Store, km KeyManager, logger *slog.Logger, now func() time.Time) *Local {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return &Local{store: store, keys: km, log: logger, now: now}
}

// Users.

// AddUser implements [Service.AddUser].
func (l *Local) AddUser(ctx context.Context, in NewUser) (UserView, error) {
	in.Email = strings.TrimSpace(in.Email)
	in.Username = strings.TrimSpace(in.Username)
	in.Name = strings.TrimSpace(in.Name)
	tz, err := checkProfile(in.Email, in.Username, in.Name, in.TimeZone, false)
	if err != nil {
		return UserView{}, newError(data.ErrInvalid, err.Error()+"; pass --email, --username, --name and --time-zone")
	}
	in.TimeZone = tz
	if len(in.Password) < MinPasswordLen {
		return UserView{}, newError(data.ErrInvalid, fmt.Sprintf("the password must be at least %d characters", MinPasswordLen))
	}
	hash, err := password.Hash(in.Password)
	if err != nil {
		return UserView{}, newError(data.ErrInvalid, fmt.Sprintf("the password cannot be used: %v", err))
	}
	u, err := l.store.CreateUser(ctx, data.User{
		Email: in.Email, Username: in.Username, Name: in.Name, TimeZone: in.TimeZone,
		PasswordHash: hash, CreatedAt: l.now().UTC(),
	})
	if errors.Is(err, data.ErrExists) {
		return UserView{}, newError(data.ErrExists, fmt.Sprintf("a user with email %s or username %s already exists; choose another", in.Email, in.Username))
	}
	if err != nil {
		return UserView{}, fmt.Errorf("add user: %w", err)
	}
	l.audit(ctx, "user_added", "user_id", u.ID)
	return userView(u), nil
}

// ListUsers implements [Service.ListUsers].
func (l *Local) ListUsers(ctx context.Context) ([]UserView, error) {
	us, err := l.store.ListUsers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	out := make([]UserView, 0, len(us))
	for _, u := range us {
		out = append(out, userView(u))
	}
	return out, nil
}

func userView(u data.User) UserView {
	v := UserView{ID: u.ID, Email: u.Email, Username: u.Username, Name: u.Name, TimeZone: u.TimeZone,
		ExternalID: u.ExternalID, State: "active"}
	if u.Disabled {
		v.State = "disabled"
		at := u.DisabledAt
		v.DisabledAt = &at
	}
	return v
}

// Clients.

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
	return fmt.Sprintf("unknown scope %s; the 30 scopes are in docs/SCOPES.md, "+
		"or in `oauthd clients create --help`", strings.Join(parts, ", "))
}

func newSecret(now time.Time) (string, data.ClientSecret) {
	secret := data.NewSecret(data.PrefixClientSecret)
	return secret, data.ClientSecret{ID: data.NewID("cs_", 9), Hash: data.Hash(secret), CreatedAt: now}
}

// CreateClient implements [Service.CreateClient]. The client starts pending.
func (l *Local) CreateClient(ctx context.Context, in NewClient) (CreatedClient, error) {
	owner := strings.TrimSpace(in.Owner)
	u, err := l.store.GetUserByLogin(ctx, owner)
	if err != nil || !strings.EqualFold(u.Email, owner) {
		if err != nil && !errors.Is(err, data.ErrNotFound) {
			return CreatedClient{}, fmt.Errorf("create client: %w", err)
		}
		return CreatedClient{}, newError(data.ErrNotFound, fmt.Sprintf("no user with email %s; add one with `oauthd users add`", owner))
	}
	scopes, err := parseScopes(in.Scopes)
	if err != nil {
		return CreatedClient{}, err
	}
	now := l.now().UTC()
	c := data.Client{
		ID: data.NewID("", 16), Name: strings.TrimSpace(in.Name), Owner: u.Email,
		Type: data.Confidential, RedirectURIs: in.RedirectURIs, Scopes: scopes,
		Status: data.StatusPending, CreatedAt: now, UpdatedAt: now,
	}
	var secret string
	if in.Public {
		c.Type = data.Public
	} else {
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
	l.audit(ctx, "client_created", "client_id", c.ID, "owner", c.Owner)
	out := CreatedClient{
		ClientID: c.ID, ClientSecret: secret, Status: string(c.Status), ClientType: string(c.Type),
		Name: c.Name, RedirectURIs: c.RedirectURIs, Scopes: c.Scopes,
	}
	if len(c.Secrets) > 0 {
		out.SecretID = c.Secrets[0].ID
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
			ID: strings.TrimSpace(lc.ClientID), Name: strings.TrimSpace(lc.Name), Owner: strings.TrimSpace(lc.Owner),
			Type: data.ClientType(lc.ClientType), RedirectURIs: lc.RedirectURIs, Legacy: true,
			Status: data.StatusApproved, CreatedAt: now, UpdatedAt: now,
		}
		if c.Type == "" {
			c.Type = data.Confidential
		}
		where := fmt.Sprintf("client %d (%q)", i+1, c.ID)
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
	out := make([]ClientView, 0, len(cs))
	for _, c := range cs {
		if status == string(data.StatusPending) && c.Status != data.StatusPending && c.Pending == nil {
			continue
		}
		out = append(out, l.clientView(c))
	}
	return out, nil
}

// ShowClient implements [Service.ShowClient].
func (l *Local) ShowClient(ctx context.Context, id string) (ClientView, error) {
	c, err := l.getClient(ctx, id)
	if err != nil {
		return ClientView{}, err
	}
	return l.clientView(c), nil
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

func (l *Local) clientView(c data.Client) ClientView {
	v := ClientView{
		ClientID: c.ID, Name: c.Name, Owner: c.Owner, ClientType: string(c.Type), Status: string(c.Status),
		RejectReason: c.RejectReason, RedirectURIs: c.RedirectURIs, Scopes: c.Scopes, Legacy: c.Legacy,
		Secrets: secretViews(c.Secrets), CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		DPoPBoundAccessTokens: c.DPoPBoundAccessTokens, RequirePAR: c.RequirePAR,
	}
	if v.RedirectURIs == nil {
		v.RedirectURIs = []string{}
	}
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

func secretViews(ss []data.ClientSecret) []SecretView {
	out := make([]SecretView, 0, len(ss))
	for _, s := range ss {
		v := SecretView{SecretID: s.ID, CreatedAt: s.CreatedAt}
		if !s.LastUsedAt.IsZero() {
			t := s.LastUsedAt
			v.LastUsedAt = &t
		}
		out = append(out, v)
	}
	return out
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

// ApproveClient implements [Service.ApproveClient]: it approves a client
// under review, or, on an approved client with a pending change, applies
// that change.
func (l *Local) ApproveClient(ctx context.Context, id string) (ClientView, error) {
	return l.ApproveRevision(ctx, id, "")
}

// ApproveRevision implements [Service.ApproveRevision]; revision "" checks
// nothing.
func (l *Local) ApproveRevision(ctx context.Context, id, revision string) (ClientView, error) {
	var change *data.ClientChange
	c, err := l.update(ctx, id, func(c data.Client) (data.Client, error) {
		change = nil
		if r := clientRevision(c); revision != "" && r != revision {
			return c, newError(data.ErrConflict, fmt.Sprintf("client %s changed since revision %s (it is now %s): nothing was approved; "+
				"look again with `oauthd clients show %s`", id, revision, r, id))
		}
		if c.Status == data.StatusApproved && c.Pending != nil {
			change = c.Pending
			return c.WithPending(), nil
		}
		c.Status, c.RejectReason = data.StatusApproved, ""
		return c, nil
	})
	if err != nil {
		return ClientView{}, err
	}
	if change != nil {
		l.audit(ctx, "client_change_approved", append([]any{"client_id", id}, changeAttrs(change)...)...)
	} else {
		l.audit(ctx, "client_approved", "client_id", id)
	}
	return l.clientView(c), nil
}

// RejectClient implements [Service.RejectClient]; reason is required. On
// an approved client with a pending change it rejects that change (the
// client stays approved, as it was); otherwise it rejects the client.
func (l *Local) RejectClient(ctx context.Context, id, reason string) (ClientView, error) {
	return l.RejectRevision(ctx, id, reason, "")
}

// RejectRevision implements [Service.RejectRevision]; revision "" checks
// nothing.
func (l *Local) RejectRevision(ctx context.Context, id, reason, revision string) (ClientView, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return ClientView{}, newError(data.ErrInvalid, "a rejection needs a reason; pass --reason TEXT")
	}
	var change *data.ClientChange
	c, err := l.update(ctx, id, func(c data.Client) (data.Client, error) {
		change = nil
		if r := clientRevision(c); revision != "" && r != revision {
			return c, newError(data.ErrConflict, fmt.Sprintf("client %s changed since revision %s (it is now %s): nothing was rejected; "+
				"look again with `oauthd clients show %s`", id, revision, r, id))
		}
		if c.Status == data.StatusApproved && c.Pending != nil {
			change = c.Pending.Clone()
			change.RejectReason = reason
			c.Pending, c.RejectedChange = nil, change
			return c, nil
		}
		c.Status, c.RejectReason = data.StatusRejected, reason
		return c, nil
	})
	if err != nil {
		return ClientView{}, err
	}
	if change != nil {
		l.audit(ctx, "client_change_rejected", append([]any{"client_id", id, "reason", reason}, changeAttrs(change)...)...)
	} else {
		l.audit(ctx, "client_rejected", "client_id", id, "reason", reason)
		if c.Status == data.StatusRejected {
			if err := l.revokeGrants(ctx, id); err != nil {
				return ClientView{}, err
			}
		}
	}
	return l.clientView(c), nil
}

// revokeGrants deletes every refresh-token family of a rejected client, so
// that its users' grants end for good: its access tokens are refused at
// once by /v2/me and introspection (which also check the client's status,
// for the moment between the rejection and this), and a later approval
// does not bring the grants back; the users authorize again.
func (l *Local) revokeGrants(ctx context.Context, id string) error {
	fams, err := l.store.ListFamilies(ctx, id)
	if err != nil {
		return fmt.Errorf("client %s is rejected, but listing its grants failed (run the rejection again to revoke them): %w", id, err)
	}
	n := 0
	for _, f := range fams {
		switch err := l.store.DeleteFamily(ctx, f.ID); {
		case err == nil:
			n++
		case !errors.Is(err, data.ErrNotFound):
			return fmt.Errorf("client %s is rejected, but revoking its grants failed after %d of %d (run the rejection again): %w", id, n, len(fams), err)
		}
	}
	l.audit(ctx, "client_grants_revoked", "client_id", id, "count", n)
	return nil
}

// GenerateSecret implements [Service.GenerateSecret]: refused when the client
// already has [data.MaxActiveSecrets] (checked again inside the store's
// transaction, so concurrent calls never make a third).
func (l *Local) GenerateSecret(ctx context.Context, id string) (CreatedSecret, error) {
	secret, s := newSecret(l.now().UTC())
	_, err := l.update(ctx, id, func(c data.Client) (data.Client, error) {
		if c.Type == data.Public {
			return c, newError(data.ErrInvalid, fmt.Sprintf("client %s is public and has no secrets", id))
		}
		if len(c.Secrets) >= data.MaxActiveSecrets {
			return c, tooMany(id)
		}
		c.Secrets = append(c.Secrets, s)
		return c, nil
	})
	if err != nil {
		return CreatedSecret{}, err
	}
	l.audit(ctx, "secret_generated", "client_id", id, "secret_id", s.ID)
	return CreatedSecret{SecretID: s.ID, ClientSecret: secret}, nil
}

// ListSecrets implements [Service.ListSecrets].
func (l *Local) ListSecrets(ctx context.Context, id string) ([]SecretView, error) {
	c, err := l.getClient(ctx, id)
	if err != nil {
		return nil, err
	}
	return secretViews(c.Secrets), nil
}

// RevokeSecret implements [Service.RevokeSecret]. It takes effect at once; a
// confidential client keeps at least one secret.
func (l *Local) RevokeSecret(ctx context.Context, id, secretID string) error {
	_, err := l.update(ctx, id, func(c data.Client) (data.Client, error) {
		i := slices.IndexFunc(c.Secrets, func(s data.ClientSecret) bool { return s.ID == secretID })
		if i < 0 {
			return c, newError(data.ErrNotFound, fmt.Sprintf("client %s has no active secret %q; list them with `oauthd clients secrets list %s`", id, secretID, id))
		}
		if len(c.Secrets) == 1 && c.Type == data.Confidential {
			return c, newError(data.ErrLastSecret, fmt.Sprintf("%s is the last secret of client %s; generate a new one first with `oauthd clients secrets generate %s`", secretID, id, id))
		}
		c.Secrets = slices.Delete(slices.Clone(c.Secrets), i, i+1)
		return c, nil
	})
	if err != nil {
		return err
	}
	l.audit(ctx, "secret_revoked", "client_id", id, "secret_id", secretID)
	return nil
}

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
	return l.clientView(c), nil
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
	return l.clientView(c), nil
}

// SetClientOptions implements [Service.SetClientOptions].
func (l *Local) SetClientOptions(ctx context.Context, id string, o ClientOptions) (ClientView, error) {
	if o.DPoPBoundAccessTokens == nil && o.RequirePAR == nil {
		return ClientView{}, newError(data.ErrInvalid, "nothing to set; give --dpop-bound-access-tokens or --require-par")
	}
	c, err := l.update(ctx, id, func(c data.Client) (data.Client, error) {
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
		"dpop_bound_access_tokens", c.DPoPBoundAccessTokens, "require_pushed_authorization_requests", c.RequirePAR)
	return l.clientView(c), nil
}
