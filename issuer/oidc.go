package issuer

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"oauthd/data"
	"oauthd/data/scope"
	"oauthd/keys/verify"
)

// OpenID Connect on top of the authorization code flow (OpenID Connect
// Core 1.0): every oauthd is an OpenID Provider. When the granted scopes
// include openid, the token endpoint adds an ID token to the code
// exchange and to every refresh (Core §3.1.3.3, §12.2); userinfo.go
// serves the same claims; the consent pages ask [Server.Interact] what a
// request needs (login, consent, or neither for prompt=none) and
// [Server.CheckLogout] what a sign-out may do (RP-Initiated Logout 1.0).
// The non-OIDC path pays one slices.Contains per token request.

// IDTokenSigner signs ID tokens with the active key: build gets the key's
// alg (at_hash depends on it) and returns the claims. *keys.Manager is
// one (SignWith).
type IDTokenSigner interface {
	SignWith(typ string, build func(alg string) (jwt.Claims, error)) (string, error)
}

// idTokenTyp is the JOSE typ of ID tokens: "JWT" (OpenID Connect Core §2
// leaves it open; RFC 7519 §5.1 recommends JWT), never at+jwt, so that an
// ID token never passes for an access token (RFC 9068 §4) nor the reverse.
const idTokenTyp = "JWT"

// Limits of the OpenID Connect request parameters.
const (
	maxNonce     = 512
	maxLoginHint = 254
	// maxMaxAge bounds max_age (seconds): ten years.
	maxMaxAge = 10 * 365 * 24 * 3600
)

// The prompt values (Core §3.1.2.1).
const (
	PromptNone          = "none"
	PromptLogin         = "login"
	PromptConsent       = "consent"
	PromptSelectAccount = "select_account"
)

var promptValues = []string{PromptNone, PromptLogin, PromptConsent, PromptSelectAccount}

// parsePrompt splits prompt (space-separated, Core §3.1.2.1) and checks
// it: known values only, each once, and none alone.
func parsePrompt(raw string) ([]string, error) {
	var out []string
	for _, p := range strings.Fields(raw) {
		if !slices.Contains(promptValues, p) {
			return nil, fmt.Errorf("prompt value %s is not supported (none, login, consent, select_account)", strconv.Quote(truncateStr(p, 40)))
		}
		if slices.Contains(out, p) {
			return nil, fmt.Errorf("prompt value %s is given twice", p)
		}
		out = append(out, p)
	}
	if slices.Contains(out, PromptNone) && len(out) > 1 {
		return nil, errors.New("prompt=none cannot be combined with other values")
	}
	return out, nil
}

// parseMaxAge reads max_age: a non-negative number of seconds.
func parseMaxAge(raw string) (time.Duration, error) {
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 || n > maxMaxAge || (len(raw) > 1 && raw[0] == '0') || raw[0] == '+' {
		return 0, errors.New("max_age must be a non-negative integer number of seconds")
	}
	return time.Duration(n) * time.Second, nil
}

func truncateStr(s string, n int) string {
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "")
	}
	return s
}

// oidcParams validates the OpenID Connect parameters of an authorization
// request (Core §3.1.2.1) into req; client is the trusted client. It
// returns the invalid_request to redirect with, or nil when they are
// valid.
func (s *Server) oidcParams(ctx context.Context, q url.Values, client data.Client, req *AuthorizeRequest) *Error {
	bad := func(desc string) *Error { return WithDescription(ErrInvalidRequest, "%s", desc) }
	if m, ok := q["response_mode"]; ok && m[0] != "query" {
		return bad("only response_mode=query is supported")
	}
	prompt, err := parsePrompt(q.Get("prompt"))
	if err != nil {
		return bad(err.Error())
	}
	req.Prompt = prompt
	if q.Has("max_age") {
		d, err := parseMaxAge(q.Get("max_age"))
		if err != nil {
			return bad(err.Error())
		}
		req.MaxAge, req.HasMaxAge = d, true
	}
	req.Nonce = q.Get("nonce")
	if len(req.Nonce) > maxNonce {
		return bad(fmt.Sprintf("nonce is longer than %d bytes", maxNonce))
	}
	req.OpenID = slices.Contains(req.Scopes, scope.OpenID)
	if req.OpenID && req.Nonce == "" && client.Type == data.Public {
		// A public client cannot keep a secret that binds the code to
		// it; the nonce binds the ID token to the browser session that
		// asked (Core §15.5.2).
		return bad("a public client must send a nonce with the openid scope")
	}
	if lh := q.Get("login_hint"); len(lh) <= maxLoginHint {
		req.LoginHint = lh // a hint only: a bad one is ignored (Core §3.1.2.1)
	}
	if q.Has("id_token_hint") {
		hint, err := s.parseIDToken(ctx, q.Get("id_token_hint"))
		if err != nil || !slices.Contains(hint.Audience, client.ID) {
			// An ID token of another client, forged, or not ours: the
			// hint names nobody this client may ask about.
			return bad("id_token_hint is not an ID token this server issued to this client")
		}
		req.HintSubject = hint.Subject
	}
	return nil
}

// HasPrompt reports whether the request's prompt has value p.
func (r *AuthorizeRequest) HasPrompt(p string) bool { return slices.Contains(r.Prompt, p) }

// Login is who is logged in at the consent pages.
type Login struct {
	UserID int64
	// AuthTime is when the user authenticated (data.Session.Authenticated):
	// the ID token's auth_time.
	AuthTime time.Time
}

// Step is what an authorization request needs next from the browser.
type Step int

// The steps [Server.Interact] returns.
const (
	// StepLogin: show the login page, which comes back to
	// [Server.AfterLogin]'s query.
	StepLogin Step = iota + 1
	// StepConsent: show the consent page.
	StepConsent
	// StepApprove: prompt=none and the user already consented to these
	// scopes: approve without a page ([Server.ApproveLogin]).
	StepApprove
)

// Interact decides what the validated request ar needs, given who is
// logged in (nil: nobody), by Core §3.1.2.1: a login when there is none,
// when prompt is login or select_account, when the login is older than
// max_age, or when id_token_hint names another user; then the consent
// page, unless prompt=none. With prompt=none nothing is shown: the answer
// is a redirect with login_required or consent_required (a
// *RedirectError), or StepApprove when the user's remembered consent
// covers the scopes. The errors carry nothing but the spec's code and a
// fixed description: a prompt=none probe from another origin learns no
// more than the spec tells it (whether someone is logged in).
func (s *Server) Interact(ctx context.Context, ar *AuthorizeRequest, login *Login) (Step, error) {
	none := ar.HasPrompt(PromptNone)
	needLogin := login == nil
	if login != nil {
		switch {
		case ar.HasPrompt(PromptLogin), ar.HasPrompt(PromptSelectAccount):
			needLogin = true
		case ar.HasMaxAge && s.now().Sub(login.AuthTime) > ar.MaxAge:
			needLogin = true
		case ar.HintSubject != "" && ar.HintSubject != strconv.FormatInt(login.UserID, 10):
			needLogin = true
		}
	}
	if needLogin {
		if none {
			return 0, s.redirectError(ar.RedirectURI, ar.State, WithDescription(ErrLoginRequired, "the user must log in"))
		}
		return StepLogin, nil
	}
	if !none {
		return StepConsent, nil
	}
	g, err := s.store.GetGrant(ctx, login.UserID, ar.Client.ID)
	switch {
	case errors.Is(err, data.ErrNotFound):
	case err != nil:
		return 0, s.authzServerError(ctx, ar, "get grant", err)
	default:
		// The consent as it holds under the client's current review
		// (data.ConsentHeld); ApproveLogin checks it again with the code.
		if held, ok := data.ConsentHeld(g, ar.Client); ok {
			if _, ok := scope.Subset(ar.Scopes, held); ok {
				return StepApprove, nil
			}
		}
	}
	return 0, s.redirectError(ar.RedirectURI, ar.State, WithDescription(ErrConsentRequired, "the user must consent"))
}

// AfterLogin returns the query of ar to come back to once the user has
// logged in: the request as it came, without what the login fulfils
// (prompt login and select_account, max_age), so that coming back does
// not ask for the login again. For a pushed request the continuation is
// sealed again with the same identity and expiry.
func (s *Server) AfterLogin(ar *AuthorizeRequest) url.Values {
	q := url.Values{}
	for k, v := range ar.Query {
		q[k] = slices.Clone(v)
	}
	if q.Has("request_uri") {
		p, ok := s.openPushed(q.Get("request_uri"))
		if !ok || !p.Consent {
			return q
		}
		params, err := url.ParseQuery(p.Params)
		if err != nil {
			return q
		}
		stripFulfilled(params)
		p.Params = params.Encode()
		q.Set("request_uri", s.sealPushed(p, parConsentURI))
		return q
	}
	stripFulfilled(q)
	return q
}

// stripFulfilled removes what a fresh login fulfils from q.
func stripFulfilled(q url.Values) {
	q.Del("max_age")
	if p, ok := q["prompt"]; ok {
		var keep []string
		for _, v := range strings.Fields(p[0]) {
			if v != PromptLogin && v != PromptSelectAccount {
				keep = append(keep, v)
			}
		}
		if len(keep) == 0 {
			q.Del("prompt")
		} else {
			q.Set("prompt", strings.Join(keep, " "))
		}
	}
}

// useNonce records the request's nonce as used by its client: a second
// authorization with the same nonce for the same client is refused while
// an ID token carrying it may still be accepted (the code's lifetime, then
// the ID token's: [Server.nonceKeep]), so that a captured authorization
// link yields at most one live ID token carrying that nonce. It is kept no
// longer: each approval stores one, and what a user can make the store
// keep is bounded (approvals.go).
func (s *Server) useNonce(ctx context.Context, req *AuthorizeRequest, now time.Time) error {
	if req.Nonce == "" || !req.OpenID {
		return nil
	}
	key := nonceKey("oidc-nonce\x00"+req.Client.ID+"\x00", req.Nonce)
	switch err := s.store.UseNonce(ctx, key, now.Add(s.nonceKeep())); {
	case errors.Is(err, data.ErrExists):
		return s.redirectError(req.RedirectURI, req.State, WithDescription(ErrInvalidRequest, "the nonce was already used; send a fresh one with every authorization request"))
	case err != nil:
		return s.authzServerError(ctx, req, "use nonce", err)
	}
	return nil
}

// nonceKeep is how long a used nonce is kept: an ID token carrying it
// comes from a code (at most CodeTTL old) and is valid for IDTokenTTL.
func (s *Server) nonceKeep() time.Duration { return s.cfg.CodeTTL + s.cfg.IDTokenTTL }

// idClaims are the claims of an ID token (Core §2, §3.1.3.6, §5.1).
type idClaims struct {
	Issuer    string `json:"iss"`
	Subject   string `json:"sub"`
	Audience  string `json:"aud"`
	ExpiresAt int64  `json:"exp"`
	IssuedAt  int64  `json:"iat"`
	AuthTime  int64  `json:"auth_time"`
	Nonce     string `json:"nonce,omitempty"`
	AtHash    string `json:"at_hash,omitempty"`
	AZP       string `json:"azp"`
	userClaims
}

func (c *idClaims) GetExpirationTime() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.ExpiresAt, 0)), nil
}
func (c *idClaims) GetIssuedAt() (*jwt.NumericDate, error) {
	return jwt.NewNumericDate(time.Unix(c.IssuedAt, 0)), nil
}
func (c *idClaims) GetNotBefore() (*jwt.NumericDate, error) { return nil, nil }
func (c *idClaims) GetIssuer() (string, error)              { return c.Issuer, nil }
func (c *idClaims) GetSubject() (string, error)             { return c.Subject, nil }
func (c *idClaims) GetAudience() (jwt.ClaimStrings, error) {
	return jwt.ClaimStrings{c.Audience}, nil
}

// userClaims are the claims about the user that the scopes release
// (Core §5.4), in the ID token and at userinfo alike.
type userClaims struct {
	// profile
	Name              string `json:"name,omitempty"`
	PreferredUsername string `json:"preferred_username,omitempty"`
	Zoneinfo          string `json:"zoneinfo,omitempty"`
	UpdatedAt         int64  `json:"updated_at,omitempty"`
	// email
	Email         string `json:"email,omitempty"`
	EmailVerified *bool  `json:"email_verified,omitempty"`
}

// claimsFor returns what scopes release of u (Core §5.4): profile → name,
// preferred_username, zoneinfo, updated_at; email → email and
// email_verified. email_verified is what the store knows: nothing
// verifies an email here (users add, imports and the platform's
// assertions state one), so it is false, and an application must not
// take the email as proof of ownership. An empty value is left out
// (Core §5.3.2).
func claimsFor(u data.User, scopes []string) userClaims {
	var c userClaims
	if slices.Contains(scopes, scope.Profile) {
		c.Name, c.PreferredUsername, c.Zoneinfo = u.Name, u.Username, u.TimeZone
		if t := u.ProfileUpdated(); !t.IsZero() {
			c.UpdatedAt = t.Unix()
		}
	}
	if slices.Contains(scopes, scope.Email) && u.Email != "" {
		verified := false
		c.Email, c.EmailVerified = u.Email, &verified
	}
	return c
}

// wantsUser reports whether the claims of scopes need the user record.
func wantsUser(scopes []string) bool {
	return slices.Contains(scopes, scope.Profile) || slices.Contains(scopes, scope.Email)
}

// tokenHash is at_hash (Core §3.1.3.6): the base64url of the left half of
// the hash of the access token's ASCII, with the hash of the alg's JWS
// hash (SHA-256 for ES256 and RS256; SHA-512 for EdDSA with Ed25519, as
// the OpenID Foundation's libraries and go-oidc do).
func tokenHash(alg, token string) (string, error) {
	var h hash.Hash
	switch alg {
	case verify.ES256, verify.RS256:
		h = sha256.New()
	case verify.EdDSA:
		h = sha512.New()
	default:
		return "", fmt.Errorf("at_hash: unsupported alg %q", alg)
	}
	h.Write([]byte(token))
	sum := h.Sum(nil)
	return base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2]), nil
}

// idTokenParams is what an ID token is made of.
type idTokenParams struct {
	userID      int64
	clientID    string
	scopes      []string
	authTime    time.Time
	nonce       string
	accessToken string
	now         time.Time
}

// mintIDToken signs the ID token of p (Core §3.1.3.3, §12.2): iss, sub
// (the user's ID, which never changes), aud and azp (the client), exp,
// iat, auth_time, nonce when the request had one, at_hash of the access
// token, and the claims the scopes release.
func (s *Server) mintIDToken(ctx context.Context, p idTokenParams) (string, error) {
	ctx, span := data.StartSpan(ctx, tracer, "", "id token")
	defer span.End()
	if s.idSigner == nil {
		return "", errors.New("id token: no IDTokenSigner configured")
	}
	var uc userClaims
	if wantsUser(p.scopes) {
		u, err := s.store.GetUser(ctx, p.userID)
		if err != nil {
			return "", fmt.Errorf("id token: get user %d: %w", p.userID, err)
		}
		uc = claimsFor(u, p.scopes)
	}
	iat := p.now.Unix()
	at := p.authTime
	if at.IsZero() {
		at = p.now
	}
	tok, err := s.idSigner.SignWith(idTokenTyp, func(alg string) (jwt.Claims, error) {
		h, err := tokenHash(alg, p.accessToken)
		if err != nil {
			return nil, err
		}
		return &idClaims{
			Issuer:     s.cfg.Issuer,
			Subject:    strconv.FormatInt(p.userID, 10),
			Audience:   p.clientID,
			ExpiresAt:  iat + int64(s.cfg.IDTokenTTL/time.Second),
			IssuedAt:   iat,
			AuthTime:   at.Unix(),
			Nonce:      p.nonce,
			AtHash:     h,
			AZP:        p.clientID,
			userClaims: uc,
		}, nil
	})
	if err != nil {
		return "", fmt.Errorf("sign id token: %w", err)
	}
	return tok, nil
}

// idTokenInfo is what an ID token presented back to us says.
type idTokenInfo struct {
	Subject  string
	Audience []string
}

// parseIDToken verifies an ID token this server issued, as presented in
// id_token_hint (Core §3.1.2.1, RP-Initiated Logout §2): the signature by
// a published key of the alg the key has, typ JWT (an access token is
// not a hint), iss and a sub. Expiry is not checked: a hint is typically
// an expired ID token.
func (s *Server) parseIDToken(ctx context.Context, tok string) (idTokenInfo, error) {
	if s.keys == nil || len(tok) > 8192 {
		return idTokenInfo{}, errors.New("id token: cannot verify")
	}
	var c jwt.RegisteredClaims
	p := jwt.NewParser(jwt.WithoutClaimsValidation(), jwt.WithValidMethods([]string{verify.ES256, verify.EdDSA, verify.RS256}))
	_, err := p.ParseWithClaims(tok, &c, func(t *jwt.Token) (any, error) {
		if typ, _ := t.Header["typ"].(string); typ != idTokenTyp {
			return nil, errors.New("not an ID token (typ)")
		}
		kid, _ := t.Header["kid"].(string)
		key, alg, err := s.keys.Key(ctx, kid)
		if err != nil {
			return nil, err
		}
		if alg != t.Method.Alg() {
			return nil, errors.New("alg differs from the key's")
		}
		return key, nil
	})
	if err != nil {
		return idTokenInfo{}, fmt.Errorf("id token: %w", err)
	}
	if c.Issuer != s.cfg.Issuer || c.Subject == "" || len(c.Audience) == 0 {
		return idTokenInfo{}, errors.New("id token: wrong issuer, or no subject or audience")
	}
	return idTokenInfo{Subject: c.Subject, Audience: c.Audience}, nil
}

// LogoutRequest is what an RP-Initiated Logout request (RP-Initiated
// Logout 1.0 §2) may do, from [Server.CheckLogout].
type LogoutRequest struct {
	// Subject is the user the id_token_hint names; "" without a valid
	// hint. Only a session of that user is ended without asking.
	Subject string
	// ClientID is the client the hint was issued to; "" without one.
	ClientID string
	// ClientName is that client's name, for the pages.
	ClientName string
	// Redirect is post_logout_redirect_uri with state, when the hint is
	// valid, its client approved and the URI one of the client's
	// registered post-logout redirect URIs (exact match); "" otherwise:
	// show the logged-out page, never a redirect.
	Redirect string
}

// CheckLogout validates the end-session parameters q (RP-Initiated
// Logout 1.0 §2, §3): id_token_hint (an ID token of ours, expired or
// not), client_id (must be one of the hint's audiences when both are
// sent), post_logout_redirect_uri and state. Nothing is refused: a bad
// parameter only takes away the redirect (and the sign-out without
// asking); only a storage failure is an error.
func (s *Server) CheckLogout(ctx context.Context, q url.Values) (*LogoutRequest, error) {
	lr := &LogoutRequest{}
	for _, vs := range q {
		if len(vs) > 1 {
			return lr, nil // repeated parameters: trust none
		}
	}
	hint := q.Get("id_token_hint")
	if hint == "" {
		return lr, nil
	}
	info, err := s.parseIDToken(ctx, hint)
	if err != nil {
		return lr, nil
	}
	clientID := info.Audience[0]
	if cid := q.Get("client_id"); cid != "" {
		if !slices.Contains(info.Audience, cid) {
			return lr, nil
		}
		clientID = cid
	}
	client, err := s.store.GetClient(ctx, clientID)
	switch {
	case errors.Is(err, data.ErrNotFound):
		return lr, nil
	case err != nil:
		return nil, fmt.Errorf("logout: get client: %w", err)
	}
	lr.Subject, lr.ClientID, lr.ClientName = info.Subject, client.ID, client.Name
	uri := q.Get("post_logout_redirect_uri")
	if uri == "" || client.Status != data.StatusApproved || !slices.Contains(client.PostLogoutRedirectURIs, uri) {
		return lr, nil
	}
	v := url.Values{}
	if st := q.Get("state"); st != "" && authzCleanValue(st) && len(st) <= authzMaxState {
		v.Set("state", st)
	}
	lr.Redirect = uri
	if len(v) > 0 {
		sep := "?"
		if strings.Contains(uri, "?") {
			sep = "&"
		}
		lr.Redirect = uri + sep + v.Encode()
	}
	return lr, nil
}
