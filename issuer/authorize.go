package issuer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"oauthd/data"
	"oauthd/data/scope"
)

// Limits of the authorization request.
const (
	// authzMaxState bounds the state parameter, which we echo back.
	authzMaxState = 1024
	// authzChallengeLen is the length of an S256 code_challenge: the
	// base64url encoding (no padding) of a SHA-256 digest (RFC 7636 §4.2).
	authzChallengeLen = 43
)

// ParseAuthorize validates an authorization request (RFC 6749 §4.1.1, PKCE
// RFC 7636 §4.3) in the order RFC 6749 §4.1.2.1 requires: first the client
// and its redirect_uri, whose failures return a *[PageError] (shown to the
// user, never a redirect, since the redirect target is not trusted yet);
// then everything else, whose failures return a *[RedirectError] to the
// registered redirect_uri carrying error, error_description, state and iss
// (RFC 9207).
//
// For a legacy client it counts the request in the client's usage (with or
// without a scope parameter) once the client and redirect_uri are trusted;
// call it once per display of the consent page. Any other error is a
// storage failure (a server error).
func (s *Server) ParseAuthorize(ctx context.Context, q url.Values) (*AuthorizeRequest, error) {
	return s.authzValidate(ctx, q, modeParse)
}

// CheckAuthorize validates q exactly like [Server.ParseAuthorize] but does
// not count it in a legacy client's usage. The consent pages call it before
// the user has logged in, so that one authorization is counted once, when
// the consent page is shown.
func (s *Server) CheckAuthorize(ctx context.Context, q url.Values) (*AuthorizeRequest, error) {
	return s.authzValidate(ctx, q, modeCheck)
}

// Approve records the user's consent to the request q (the query posted
// back by the consent form, validated again from scratch exactly like
// [Server.ParseAuthorize], without counting usage), issues a single-use
// authorization code and returns the redirect to
// redirect_uri?code=…&state=…&iss=… (RFC 6749 §4.1.2, RFC 9207).
func (s *Server) Approve(ctx context.Context, q url.Values, userID int64) (string, error) {
	return s.ApproveLogin(ctx, q, Login{UserID: userID})
}

// ApproveLogin is [Server.Approve] for login.UserID, whose login.AuthTime
// (zero: now) becomes the auth_time of the ID tokens the code leads to
// (OpenID Connect Core §2). An OpenID Connect request's nonce is used up
// here (oidc.go, useNonce).
//
// A request with prompt=none is a silent approval: it records no consent,
// and its code is made only if the user's remembered consent, judged
// against the client as stored at that moment ([data.ConsentHeld]),
// covers it (consent_required otherwise). Every approval makes its code
// with [data.Store.CreateConsentedCode], so that the check of the consent
// and the code are one step against a removal of the app ("Remove
// access"): the consent page's Allow records the consent first, and a
// removal between the two leaves no code (access_denied). Each approval
// counts against the user's budget (approvals.go).
func (s *Server) ApproveLogin(ctx context.Context, q url.Values, login Login) (string, error) {
	userID := login.UserID
	if userID <= 0 {
		return "", fmt.Errorf("approve: invalid user ID %d", userID)
	}
	req, err := s.authzValidate(ctx, q, modeDecide)
	if err != nil {
		return "", err
	}
	if err := s.spendApproval(ctx, req, userID); err != nil {
		return "", err
	}
	silent := req.HasPrompt(PromptNone)
	now := s.now().UTC()
	if err := s.useNonce(ctx, req, now); err != nil {
		return "", err
	}
	if !silent {
		if req.Client.MetadataHost != "" {
			// Stored only now that a signed-in user consents to it.
			if err := s.storeMetadataClient(ctx, req.Client); err != nil {
				return "", s.authzUserError(ctx, req, "store client of metadata document", err)
			}
		}
		if err := s.authzRecordGrant(ctx, req, userID, now); err != nil {
			return "", s.authzUserError(ctx, req, "record grant", err)
		}
	}
	code := data.NewAuthCode(now)
	ac := data.AuthCode{
		Hash:          data.AuthCodeKey(code),
		ClientID:      req.Client.ID,
		UserID:        userID,
		RedirectURI:   req.RedirectURI,
		Scopes:        slices.Clone(req.Scopes),
		Unrestricted:  req.Unrestricted,
		CodeChallenge: req.CodeChallenge,
		Resources:     slices.Clone(req.Resources),
		CreatedAt:     now,
		ExpiresAt:     now.Add(s.cfg.CodeTTL),
	}
	if req.OpenID {
		ac.Nonce = req.Nonce
		ac.AuthTime = login.AuthTime.UTC()
		if ac.AuthTime.IsZero() {
			ac.AuthTime = now
		}
	}
	switch err := s.store.CreateConsentedCode(ctx, ac, consentCovers(ac)); {
	case errors.Is(err, errNoConsent) && silent:
		return "", s.redirectError(req.RedirectURI, req.State, WithDescription(ErrConsentRequired, "the user must consent"))
	case errors.Is(err, errNoConsent), errors.Is(err, data.ErrNotFound):
		// The user removed the app, or the operator changed the client,
		// while the user was approving: nothing is issued.
		return "", s.redirectError(req.RedirectURI, req.State, WithDescription(ErrAccessDenied, "the user's consent no longer covers the request; authorize again"))
	case err != nil:
		return "", s.authzUserError(ctx, req, "create authorization code", err)
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "audit",
		slog.String("event", "consent_granted"),
		slog.String("client_id", req.Client.ID),
		slog.Int64("user_id", userID),
		slog.String("scope", scope.Join(req.Scopes)),
		slog.Bool("unrestricted", req.Unrestricted),
		slog.Any("resources", req.Resources),
	)
	v := url.Values{}
	v.Set("code", code)
	return s.authzRedirect(req.RedirectURI, v, req.State), nil
}

// Deny validates q again (like [Server.Approve]) and returns the redirect
// that tells the client the user refused: redirect_uri?error=access_denied
// with state and iss (RFC 6749 §4.1.2.1).
func (s *Server) Deny(ctx context.Context, q url.Values, userID int64) (string, error) {
	req, err := s.authzValidate(ctx, q, modeDecide)
	if err != nil {
		return "", err
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "audit",
		slog.String("event", "consent_denied"),
		slog.String("client_id", req.Client.ID),
		slog.Int64("user_id", userID),
		slog.String("scope", scope.Join(req.Scopes)),
	)
	return s.redirectError(req.RedirectURI, req.State, WithDescription(ErrAccessDenied, "The user denied the request.")).URL, nil
}

// authzMode says who validates an authorization request.
type authzMode int

const (
	modeCheck  authzMode = iota // CheckAuthorize: before login
	modeParse                   // ParseAuthorize: the consent page; counts a legacy client's usage
	modeDecide                  // Approve, Deny: a pushed request is used up
	modePush                    // the pushed authorization request endpoint
)

// authzValidate is ParseAuthorize, CheckAuthorize, Approve's and Deny's
// validation, and the pushed authorization request endpoint's (mode).
func (s *Server) authzValidate(ctx context.Context, q url.Values, mode authzMode) (*AuthorizeRequest, error) {
	// 0. A pushed request (RFC 9126 §4): its parameters replace q; the
	// consent form carries the continuation (orig) instead.
	var orig url.Values
	if _, ok := q["request_uri"]; ok && mode != modePush && isPushedURI(q.Get("request_uri")) {
		pushed, cont, err := s.resolvePushed(ctx, q, mode)
		if err != nil {
			return nil, err
		}
		q, orig = pushed, cont
	}
	// 1. The client and its redirect_uri: nothing may redirect before both
	// are trusted (RFC 6749 §4.1.2.1, §10.15).
	client, err := s.authzClient(ctx, q)
	if err != nil {
		return nil, err
	}
	redirectURI, err := authzRedirectURI(q, client)
	if err != nil {
		return nil, err
	}
	hasScope := authzHasScope(q["scope"])
	if err := authzClientUsable(client, hasScope); err != nil {
		return nil, err
	}
	if mode == modeParse && client.Legacy {
		s.authzCountUsage(ctx, client.ID, hasScope)
	}
	if client.RequirePAR && orig == nil && mode != modePush {
		return nil, NewPageError("Invalid authorization request",
			authzQuote(client.Name)+" must send its authorization requests to the pushed authorization request endpoint first (require_pushed_authorization_requests). The application must fix its sign-in.")
	}

	// 2. From here on, errors go back to the client by redirect.
	state, stateOK := authzState(q)
	fail := func(e *Error) error { return s.redirectError(redirectURI, state, e) }
	if e := authzCheckParams(q, stateOK, orig != nil); e != nil {
		return nil, fail(e)
	}
	if !client.AllowsGrant(data.GrantAuthorizationCode) {
		// RFC 6749 §4.1.2.1: the client may not use the authorization
		// code grant (its grant types are reviewed).
		return nil, fail(WithDescription(ErrUnauthorizedClient, "the client may not use the authorization_code grant"))
	}
	scopes, e := authzScopes(q.Get("scope"), client)
	if e != nil {
		return nil, fail(e)
	}
	resources, e := s.requestedResources(q["resource"])
	if e != nil {
		return nil, fail(e)
	}
	challenge, e := authzPKCE(q, client.Type)
	if e != nil {
		return nil, fail(e)
	}

	if orig == nil {
		orig = q
	}
	req := &AuthorizeRequest{
		Client:        client,
		RedirectURI:   redirectURI,
		State:         state,
		Scopes:        scopes,
		Unrestricted:  client.Legacy,
		CodeChallenge: challenge,
		Resources:     resources,
		Query:         orig,
	}
	if e := s.oidcParams(ctx, q, client, req); e != nil {
		return nil, fail(e)
	}
	return req, nil
}

// authzClient returns the client that q names (a registered client or an
// AI assistant's metadata document), or the *[PageError] that says why
// there is none. It refuses a repeated client_id or redirect_uri first.
func (s *Server) authzClient(ctx context.Context, q url.Values) (data.Client, error) {
	switch {
	case len(q["client_id"]) > 1:
		return data.Client{}, NewPageError("Invalid authorization request",
			"The client_id parameter was given more than once. The application that sent you here must fix its authorization link.")
	case len(q["redirect_uri"]) > 1:
		return data.Client{}, NewPageError("Invalid authorization request",
			"The redirect_uri parameter was given more than once. The application that sent you here must fix its authorization link.")
	}
	clientID := q.Get("client_id")
	if clientID == "" {
		return data.Client{}, NewPageError("Invalid authorization request",
			"The client_id parameter is missing. The application that sent you here must fix its authorization link.")
	}
	if !authzCleanValue(clientID) || len(clientID) > 200 {
		return data.Client{}, NewPageError("Unknown application",
			"The client_id parameter is not a valid client ID.")
	}
	var client data.Client
	var err error
	if data.IsMetadataClientID(clientID) {
		// An AI assistant's metadata document (clientmeta.go).
		if client, err = s.metadataClient(ctx, clientID); err != nil {
			return data.Client{}, err
		}
	} else {
		client, err = s.store.GetClient(ctx, clientID)
	}
	if errors.Is(err, data.ErrNotFound) {
		return data.Client{}, NewPageError("Unknown application",
			fmt.Sprintf("No application is registered under the client ID %s.", authzQuote(clientID)))
	}
	if err != nil {
		return data.Client{}, fmt.Errorf("authorize: get client: %w", err)
	}
	return client, nil
}

// authzRedirectURI returns q's redirect_uri when it is one of client's
// (exact string comparison, RFC 6749 §3.1.2.3, RFC 9700 §4.1.3: no
// normalisation, no prefix or pattern matching; a public client's
// loopback IP redirect URI on any port, RFC 8252 §7.3), or the
// *[PageError] that says why it is not.
func authzRedirectURI(q url.Values, client data.Client) (string, error) {
	redirectURI := q.Get("redirect_uri")
	if redirectURI == "" {
		return "", NewPageError("Invalid authorization request",
			"The redirect_uri parameter is missing. The application that sent you here must fix its authorization link.")
	}
	if !data.RedirectURIMatches(client.RedirectURIs, redirectURI, client.Type == data.Public) {
		if client.Pending != nil && slices.Contains(client.Pending.AddRedirectURIs, redirectURI) {
			// Asked for by the owner, not approved: never a redirect there.
			return "", NewPageError("Redirect URI not approved yet",
				"The redirect_uri was added to "+authzQuote(client.Name)+" recently and is waiting for a platform administrator's review. It cannot be used until it is approved.")
		}
		return "", NewPageError("Unregistered redirect URI",
			"The redirect_uri is not one of the redirect URIs registered for "+authzQuote(client.Name)+". It must match a registered URI exactly.")
	}
	return redirectURI, nil
}

// authzClientUsable decides whether client may sign users in now: it is
// approved, and (unless legacy) its authorization link carries a scope.
func authzClientUsable(client data.Client, hasScope bool) error {
	switch client.Status {
	case data.StatusApproved:
	case data.StatusPending:
		return NewPageError("Application not approved yet",
			authzQuote(client.Name)+" is waiting for review and cannot be used to sign in yet.")
	default:
		return NewPageError("Application not available",
			authzQuote(client.Name)+" was not approved and cannot be used to sign in.")
	}
	if !client.Legacy && !hasScope {
		// The seed: a client whose scopes were saved before its
		// authorization URL carried scope fails to authorize.
		return NewPageError("Invalid authorization request",
			"The authorization link of "+authzQuote(client.Name)+" does not say which permissions (scope) it asks for. The application must add a scope parameter.")
	}
	return nil
}

// authzState returns the state parameter to echo back ("" when absent or
// repeated) and ok false when it is unfit to echo (control characters,
// invalid UTF-8, longer than authzMaxState): then none is echoed.
func authzState(q url.Values) (state string, ok bool) {
	st := q["state"]
	if len(st) != 1 {
		return "", true
	}
	if authzCleanValue(st[0]) && len(st[0]) <= authzMaxState {
		return st[0], true
	}
	return "", false
}

// authzCheckParams decides the rules every parameter of an authorization
// request obeys: none repeated but resource (RFC 6749 §3.1, RFC 8707 §2),
// clean values, a state fit to echo (stateOK), no request object, a
// request_uri only from a pushed request (pushed), and response_type code.
func authzCheckParams(q url.Values, stateOK, pushed bool) *Error {
	for _, name := range slices.Sorted(maps.Keys(q)) {
		vals := q[name]
		if len(vals) > 1 && name != "resource" { // RFC 8707 §2: resource may repeat
			// RFC 6749 §3.1: request parameters must not be repeated.
			return WithDescription(ErrInvalidRequest, "%s", "the "+authzParamName(name)+" parameter was given more than once")
		}
		for _, v := range vals {
			if !authzCleanValue(v) {
				return WithDescription(ErrInvalidRequest, "%s", "the "+authzParamName(name)+" parameter contains invalid UTF-8 or control characters")
			}
		}
	}
	if !stateOK {
		return WithDescription(ErrInvalidRequest, "state is longer than %d bytes", authzMaxState)
	}
	// Request objects (OpenID Connect Core §6) are not supported; a
	// request_uri is accepted only as a pushed request's (RFC 9126).
	if q.Has("request") {
		return WithDescription(ErrRequestNotSupported, "request objects are not supported; send the parameters themselves or push them (PAR)")
	}
	if q.Has("request_uri") && !pushed {
		return WithDescription(ErrRequestURINotSupported, "request_uri is accepted only from the pushed authorization request endpoint")
	}
	if rt, ok := q["response_type"]; ok && rt[0] != "code" {
		return WithDescription(ErrUnsupportedResponseType, "only response_type=code is supported")
	}
	return nil
}

// authzScopes returns the scopes that raw (the scope parameter) asks of
// client: known names (with a suggestion for a misspelt one), each among
// the client's reviewed scopes unless the client is legacy.
func authzScopes(raw string, client data.Client) ([]string, *Error) {
	scopes, err := scope.Parse(raw)
	if u, ok := errors.AsType[*scope.UnknownError](err); ok {
		desc := "unknown scope " + authzNames(u.Names)
		if len(u.Names) == 1 {
			if sug := scope.Suggest(u.Names[0]); len(sug) > 0 {
				desc += " (did you mean " + strings.Join(sug, " or ") + "?)"
			}
		}
		return nil, WithDescription(ErrInvalidScope, "%s", desc)
	} else if err != nil {
		return nil, WithDescription(ErrInvalidScope, "scope cannot be parsed")
	}
	if !client.Legacy {
		if outside, ok := scope.Subset(scopes, client.Scopes); !ok {
			if client.Pending != nil && !slices.ContainsFunc(outside, func(s string) bool { return !slices.Contains(client.Pending.AddScopes, s) }) {
				return nil, WithDescription(ErrInvalidScope, "%s", "scope "+authzNames(outside)+" is waiting for review and not approved for this client yet")
			}
			return nil, WithDescription(ErrInvalidScope, "%s", "scope "+authzNames(outside)+" is not registered for this client")
		}
	}
	return scopes, nil
}

// authzPKCE returns q's PKCE code_challenge (RFC 7636 §4.3 and
// §4.4.1; S256 only, OAuth 2.1 §4.1.1), "" when there is none, which only
// a confidential client may omit.
func authzPKCE(q url.Values, typ data.ClientType) (string, *Error) {
	switch m, ok := q["code_challenge_method"]; {
	case !ok || m[0] == "S256":
	case m[0] == "plain":
		return "", WithDescription(ErrInvalidRequest, "code_challenge_method plain is not supported; use S256")
	default:
		return "", WithDescription(ErrInvalidRequest, "code_challenge_method must be S256")
	}
	challenge, hasChallenge := q.Get("code_challenge"), q.Has("code_challenge")
	switch {
	case hasChallenge && !authzValidChallenge(challenge):
		return "", WithDescription(ErrInvalidRequest, "code_challenge must be the 43-character base64url SHA-256 of the code_verifier (S256)")
	case !hasChallenge && typ == data.Public:
		return "", WithDescription(ErrInvalidRequest, "a public client must send code_challenge (PKCE, S256)")
	}
	return challenge, nil
}

// authzRedirect returns redirectURI with params, state (when not empty) and
// iss added to its query. The registered URI is kept byte for byte,
// including its own query (RFC 6749 §3.1.2), so the result always starts
// with it.
func (s *Server) authzRedirect(redirectURI string, params url.Values, state string) string {
	if state != "" {
		params.Set("state", state)
	}
	params.Set("iss", s.cfg.Issuer)
	sep := "?"
	if i := strings.IndexByte(redirectURI, '?'); i >= 0 {
		sep = "&"
		if i == len(redirectURI)-1 || strings.HasSuffix(redirectURI, "&") {
			sep = ""
		}
	}
	return redirectURI + sep + params.Encode()
}

// redirectError returns the *RedirectError that reports e to the client:
// redirectURI with e's code and description as error and
// error_description, and state and iss (RFC 6749 §4.1.2.1, RFC 9207).
// The description is made valid here ([rfcDescription]), and the
// returned error carries it as sent.
func (s *Server) redirectError(redirectURI, state string, e *Error) *RedirectError {
	if d := rfcDescription(e.Description); d != e.Description {
		e = WithDescription(e, "%s", d)
	}
	v := url.Values{}
	v.Set("error", e.Code)
	v.Set("error_description", e.Description)
	return &RedirectError{URL: s.authzRedirect(redirectURI, v, state), Err: e}
}

// authzServerError logs a storage failure met after the redirect URI was
// validated and returns the server_error redirect (RFC 6749 §4.1.2.1).
func (s *Server) authzServerError(ctx context.Context, req *AuthorizeRequest, op string, err error) error {
	if Unavailable(err) {
		// RFC 6749 §4.1.2.1: the client may retry the request later.
		s.cfg.Outage.Refused(ctx, err)
		return s.redirectError(req.RedirectURI, req.State, WithDescription(ErrTemporarilyUnavailable, "the database is unavailable; try again in a moment"))
	}
	s.log.LogAttrs(ctx, slog.LevelError, "authorize failed",
		slog.String("op", op), slog.String("client_id", req.Client.ID), slog.String("err", err.Error()))
	return s.redirectError(req.RedirectURI, req.State, WithDescription(ErrServerError, "the authorization server could not complete the request; try again"))
}

// authzUserError is authzServerError, except for a user disabled while
// consenting (the store refuses to record anything for them): the client
// is told access_denied, as the user can no longer grant anything.
func (s *Server) authzUserError(ctx context.Context, req *AuthorizeRequest, op string, err error) error {
	if !errors.Is(err, data.ErrUserDisabled) {
		return s.authzServerError(ctx, req, op, err)
	}
	return s.redirectError(req.RedirectURI, req.State, WithDescription(ErrAccessDenied, "the user's account is disabled"))
}

// authzRecordGrant stores the user's consent to req ([data.ConsentTo]):
// the scopes of an earlier consent to the client that still hold, and
// req's.
func (s *Server) authzRecordGrant(ctx context.Context, req *AuthorizeRequest, userID int64, now time.Time) error {
	g, err := s.store.GetGrant(ctx, userID, req.Client.ID)
	found := err == nil
	if err != nil && !errors.Is(err, data.ErrNotFound) {
		return err
	}
	return s.store.PutGrant(ctx, data.ConsentTo(g, found, req.Client, userID, req.Scopes, now))
}

// errAuthzNotLegacy aborts a usage update when the client was migrated in
// the meantime.
var errAuthzNotLegacy = errors.New("client is no longer legacy")

// authzCountUsage counts one authorization request of a legacy client in
// today's (UTC) [data.UsageDay], keeping the last [data.MaxUsageDays] days.
// A failure is logged, not returned: statistics never block a sign-in.
func (s *Server) authzCountUsage(ctx context.Context, clientID string, withScope bool) {
	day := s.now().UTC().Format(time.DateOnly)
	_, err := s.store.UpdateClient(ctx, clientID, func(c data.Client) (data.Client, error) {
		if !c.Legacy {
			return c, errAuthzNotLegacy
		}
		c.Usage = authzAddUsage(c.Usage, day, withScope)
		return c, nil
	})
	if Unavailable(err) {
		s.cfg.Outage.Noticed(ctx, err) // logged once per outage, not per request
		return
	}
	if err != nil && !errors.Is(err, errAuthzNotLegacy) {
		s.log.LogAttrs(ctx, slog.LevelWarn, "count legacy usage failed",
			slog.String("client_id", clientID), slog.String("err", err.Error()))
	}
}

// authzAddUsage returns usage with one request counted on day, sorted by
// day (newest last) and trimmed to the last [data.MaxUsageDays] days. It
// does not modify usage.
func authzAddUsage(usage []data.UsageDay, day string, withScope bool) []data.UsageDay {
	usage = slices.Clone(usage)
	i := slices.IndexFunc(usage, func(u data.UsageDay) bool { return u.Day == day })
	if i < 0 {
		usage = append(usage, data.UsageDay{Day: day})
		slices.SortStableFunc(usage, func(a, b data.UsageDay) int { return strings.Compare(a.Day, b.Day) })
		i = slices.IndexFunc(usage, func(u data.UsageDay) bool { return u.Day == day })
	}
	if withScope {
		usage[i].WithScope++
	} else {
		usage[i].WithoutScope++
	}
	if n := len(usage); n > data.MaxUsageDays {
		usage = usage[n-data.MaxUsageDays:]
	}
	return usage
}

// authzHasScope reports whether the scope parameter is present with at
// least one name in one of its values.
func authzHasScope(vals []string) bool {
	for _, v := range vals {
		if strings.ContainsFunc(v, func(r rune) bool {
			return r != ' ' && r != '+' && r != ',' && r != '\t' && r != '\n' && r != '\r'
		}) {
			return true
		}
	}
	return false
}

// authzCleanValue reports whether v is valid UTF-8 without NUL or other
// control characters.
func authzCleanValue(v string) bool {
	return utf8.ValidString(v) && !strings.ContainsFunc(v, unicode.IsControl)
}

// authzValidChallenge reports whether c has the form of an S256
// code_challenge: 43 characters of the base64url alphabet.
func authzValidChallenge(c string) bool {
	return len(c) == authzChallengeLen && data.IsBase64URL(c)
}

// authzQuote quotes a value for a human-readable message: Go-quoted (so
// control characters and invalid UTF-8 are escaped) and cut to 80 bytes.
// HTML escaping is the page renderer's job.
func authzQuote(v string) string {
	if len(v) > 80 {
		v = strings.ToValidUTF8(v[:80], "") + "…"
	}
	return strconv.Quote(v)
}

// authzParamName returns a parameter name fit for an error description.
func authzParamName(name string) string {
	if len(name) > 40 {
		name = name[:40]
	}
	return strconv.Quote(name)
}

// authzNames lists at most three names for an error description.
func authzNames(names []string) string {
	const max = 3
	out := make([]string, 0, max+1)
	for i, n := range names {
		if i == max {
			out = append(out, fmt.Sprintf("and %d more", len(names)-max))
			break
		}
		if len(n) > 40 {
			n = n[:40] + "..."
		}
		out = append(out, n)
	}
	return strings.Join(out, ", ")
}

// rfcDescription makes desc a valid error_description (RFC 6749
// §4.1.2.1 and §5.2: %x20-21 / %x23-5B / %x5D-7E): other bytes become
// '?' and quotes become apostrophes. Every error description oauthd
// sends goes through it where it is written: the redirect's in
// redirectError (whose typed error then carries what was sent), the JSON
// bodies' in writeOAuthError.
func rfcDescription(desc string) string {
	b := []byte(desc)
	for i, c := range b {
		switch {
		case c == '"':
			b[i] = '\''
		case c == '\\' || c < 0x20 || c > 0x7e:
			b[i] = '?'
		}
	}
	if len(b) > 300 {
		b = b[:300]
	}
	return string(b)
}
