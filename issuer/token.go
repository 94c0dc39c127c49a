package issuer

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"oauthd/data"
	"oauthd/data/scope"
	"oauthd/issuer/throttle"
	"oauthd/keys/verify"
)

// tokenState is the token side's part of a [Server]: the failed-
// authentication limiter and the precomputed metadata document.
type tokenState struct {
	limiter  *throttle.Limiter
	metadata []byte
}

func newTokenState(cfg Config) *tokenState {
	return &tokenState{
		limiter: throttle.New(throttle.Config{
			Name: "token", Rules: tokenLimits, Now: cfg.Now, Registerer: cfg.Registerer, Shared: cfg.Throttle,
		}),
		metadata: buildMetadata(cfg),
	}
}

// tokenResponse is the successful token response (RFC 6749 §5.1).
type tokenResponse struct {
	AccessToken  string
	RefreshToken string
	ExpiresIn    int64
	Scope        string // "" omits the member (unrestricted legacy grant)
	DPoP         bool   // token_type DPoP: the access token is bound (RFC 9449 §5)
	IDToken      string // OpenID Connect Core §3.1.3.3; "" omits the member
}

// handleToken is POST /v2/auth/oauth2/token (RFC 6749 §3.2): the grants
// of the table of grants (grants.go).
func (s *Server) handleToken(c echo.Context) error {
	start := time.Now()
	req, perr := parseTokenRequest(c.Request())
	grant := grantLabel(req.GrantType)
	if span := trace.SpanFromContext(c.Request().Context()); span.IsRecording() {
		span.SetAttributes(attribute.String("oauth.grant_type", grant))
	}
	var resp tokenResponse
	var err error
	if perr != nil {
		err = perr
	} else {
		resp, err = s.token(c.Request().Context(), c, &req)
	}
	result := "ok"
	if err != nil {
		oe := toOAuthError(c, s.log, s.cfg.Outage, err)
		result = oe.Code
		err = writeOAuthError(c, oe)
	} else {
		err = writeTokenResponse(c, resp)
	}
	s.metrics.tokenRequests.WithLabelValues(grant, result).Inc()
	s.metrics.tokenDuration.WithLabelValues(grant).Observe(time.Since(start).Seconds())
	return err
}

// token runs one token request after parsing.
func (s *Server) token(ctx context.Context, c echo.Context, req *tokenRequest) (tokenResponse, error) {
	if req.GrantType == "" {
		return tokenResponse{}, tokBadRequest("grant_type is required")
	}
	g := grantOf(req.GrantType)
	if g == nil {
		return tokenResponse{}, WithDescription(ErrUnsupportedGrantType, "grant_type must be one of %s", strings.Join(grantTypesSupported(), ", "))
	}
	client, err := s.authenticateClient(ctx, c, req)
	if err != nil {
		return tokenResponse{}, err
	}
	if !client.AllowsGrant(g.typ) {
		// RFC 6749 §5.2: the client authenticated but may not use this
		// grant (its grant types are reviewed, like its scopes).
		return tokenResponse{}, WithDescription(ErrUnauthorizedClient, "the client may not use the %s grant; its grant types are %s", g.typ, strings.Join(client.AllowedGrantTypes(), ", "))
	}
	if p := g.missingParam(req); p != "" {
		return tokenResponse{}, tokBadRequest("%s is required", p)
	}
	proof, err := s.tokenProof(c, client)
	if err != nil {
		return tokenResponse{}, err
	}
	return g.handle(s, ctx, c, client, req, proof)
}

// exchangeCode runs the authorization_code grant; the table of grants has
// checked that code and redirect_uri are present.
func (s *Server) exchangeCode(ctx context.Context, c echo.Context, client data.Client, req *tokenRequest, proof *verify.Proof) (tokenResponse, error) {
	resources, e := s.requestedResources(req.Resources)
	if e != nil {
		return tokenResponse{}, e
	}
	return s.redeemCode(ctx, c, client, proof, data.AuthCodeKey(req.Code), false, resources, func(code data.AuthCode, now time.Time) *Error {
		return checkCode(code, client, req, now)
	})
}

// redeemCode exchanges the authorization code stored under key for a
// refresh-token family and tokens: the code grant's exchange, and the
// device grant's once the user approved (the consent side stored a code
// under the device code's key). check runs inside the store's
// transaction. device words the errors for a device code, and a second
// redemption of one is refused without revoking what the first issued
// (two polls racing are not a leak). requested are the token request's
// RFC 8707 resources, checked (requestedResources; nil: the code's).
func (s *Server) redeemCode(ctx context.Context, c echo.Context, client data.Client, proof *verify.Proof, key []byte, device bool,
	requested []string, check func(code data.AuthCode, now time.Time) *Error) (tokenResponse, error) {
	jkt := proofJKT(proof)
	now := s.now()
	var refreshToken string
	var access *pendingToken
	var openid bool
	code, fam, err := s.store.ExchangeAuthCode(ctx, key, func(code data.AuthCode) (data.Family, error) {
		if e := check(code, now); e != nil {
			return data.Family{}, e
		}
		resources, e := tokenResources(requested, code.Resources)
		if e != nil {
			return data.Family{}, e
		}
		scopes, e := codeScopes(code, client)
		if e != nil {
			return data.Family{}, e
		}
		id := data.NewFamilyID(now)
		refreshToken = s.tagger.NewToken(id, 0)
		access = s.startAccessToken(ctx, now, id, code.UserID, code.ClientID, scopes, code.Unrestricted, jkt, resources)
		abs := now.Add(s.cfg.RefreshMax)
		// An ID token only when openid is still granted (OpenID Connect
		// Core §3.1.3.3); the family keeps the auth_time for refreshes.
		var authTime time.Time
		if openid = slices.Contains(scopes, scope.OpenID); openid {
			authTime = code.AuthTime
		}
		return data.Family{
			AuthTime:     authTime,
			JKT:          refreshBinding(client, jkt),
			ID:           id,
			ClientID:     code.ClientID,
			UserID:       code.UserID,
			Scopes:       scopes,
			Unrestricted: code.Unrestricted,
			TokenHash:    data.Hash(refreshToken),
			CreatedAt:    now,
			RotatedAt:    now,
			ExpiresAt:    minTime(now.Add(s.cfg.RefreshIdle), abs),
			AbsoluteExp:  abs,
			CodeHash:     code.Hash,
			Tagged:       true,
			Resources:    code.Resources,
		}, nil
	})
	if err != nil {
		return tokenResponse{}, s.codeRefused(ctx, c, err, code, client, device)
	}
	if err := s.keepIfApproved(ctx, client.ID, fam.ID); err != nil {
		return tokenResponse{}, err
	}
	if err := s.spendProof(ctx, c, proof, client, fam); err != nil {
		return tokenResponse{}, err
	}
	tok, err := access.wait()
	if err != nil {
		return tokenResponse{}, err
	}
	resp := s.newTokenResponse(tok, refreshToken, fam.Scopes, fam.Unrestricted, jkt)
	if openid {
		resp.IDToken, err = s.mintIDToken(ctx, idTokenParams{userID: fam.UserID, clientID: fam.ClientID, scopes: fam.Scopes,
			authTime: fam.AuthTime, nonce: code.Nonce, accessToken: tok, now: now})
		if err != nil {
			return tokenResponse{}, err
		}
	}
	return resp, nil
}

// codeScopes returns the scopes a grant from code is issued with.
// Narrowing reaches a code as it reaches a grant (refresh): a scope taken
// from the client since the consent is not issued, and a code left with
// none is invalid_grant.
func codeScopes(code data.AuthCode, client data.Client) ([]string, *Error) {
	if code.Unrestricted || client.Legacy {
		return code.Scopes, nil
	}
	scopes := keptScopes(code.Scopes, client.Scopes)
	if len(scopes) == 0 {
		return nil, WithDescription(ErrInvalidGrant, "the client no longer has any of the scopes the user authorized; the user must authorize again")
	}
	return scopes, nil
}

// codeRefused turns the store's refusal of a code exchange into the
// grant's answer; code is what the store returned with the error (the
// used code, for a replay). device words the answer for a device code, and
// does not revoke what a first redemption issued.
func (s *Server) codeRefused(ctx context.Context, c echo.Context, err error, code data.AuthCode, client data.Client, device bool) error {
	var oe *Error
	switch {
	case errors.As(err, &oe):
		return oe
	case device && errors.Is(err, data.ErrNotFound):
		// Approved, but the code is gone: the user removed the app or was
		// disabled since.
		return WithDescription(errDeviceAccessDenied, "the authorization was withdrawn")
	case device && errors.Is(err, data.ErrCodeUsed):
		return WithDescription(ErrInvalidGrant, "the device code was already used")
	case errors.Is(err, data.ErrNotFound):
		return WithDescription(ErrInvalidGrant, "the authorization code is invalid or expired")
	case errors.Is(err, data.ErrCodeUsed):
		if code.ClientID == client.ID && code.FamilyID != "" {
			// The rightful client presents the code a second time: the
			// code leaked; revoke what it issued (RFC 6749 §4.1.2).
			if derr := s.store.DeleteFamily(ctx, code.FamilyID); derr != nil && !errors.Is(derr, data.ErrNotFound) {
				return fmt.Errorf("revoke family of replayed code: %w", derr)
			}
			s.audit(ctx, c, "code_replay", client.ID, code.UserID)
		}
		return WithDescription(ErrInvalidGrant, "the authorization code was already used")
	}
	return fmt.Errorf("exchange code: %w", err)
}

// keepIfApproved keeps the grant famID just stored for clientID only if
// the client is still approved, and revokes it otherwise.
//
// A rejection sets the client's status, then lists and deletes its grants
// (admin.RejectClient); a grant stored after that list, by an exchange
// that authenticated the client before the rejection, would outlive it
// (and come back with a later approval). Looking at the status again after
// the grant is stored closes that gap.
func (s *Server) keepIfApproved(ctx context.Context, clientID, famID string) error {
	switch cur, err := s.store.GetClient(ctx, clientID); {
	case err != nil && !errors.Is(err, data.ErrNotFound):
		return fmt.Errorf("exchange code: check client: %w", err)
	case err != nil || cur.Status != data.StatusApproved:
		if derr := s.store.DeleteFamily(ctx, famID); derr != nil && !errors.Is(derr, data.ErrNotFound) {
			return fmt.Errorf("exchange code: revoke the grant of a client no longer approved: %w", derr)
		}
		return WithDescription(ErrInvalidClient, "client is not approved")
	}
	return nil
}

// checkCode checks a stored code against the request (RFC 6749 §4.1.3,
// RFC 7636 §4.6). It is pure: it runs inside the store's transaction.
func checkCode(code data.AuthCode, client data.Client, req *tokenRequest, now time.Time) *Error {
	if code.ClientID != client.ID {
		return WithDescription(ErrInvalidGrant, "the authorization code was issued to another client")
	}
	if !now.Before(code.ExpiresAt) {
		return WithDescription(ErrInvalidGrant, "the authorization code is invalid or expired")
	}
	if code.RedirectURI != req.RedirectURI {
		return WithDescription(ErrInvalidGrant, "redirect_uri differs from the one of the authorization request")
	}
	if code.CodeChallenge == "" {
		if req.CodeVerifier != "" {
			// RFC 9700 §2.1.1: a verifier without a challenge is a PKCE
			// downgrade attempt.
			return WithDescription(ErrInvalidGrant, "code_verifier sent but the authorization request had no code_challenge")
		}
		if client.Type == data.Public {
			return WithDescription(ErrInvalidGrant, "a public client must use PKCE")
		}
		return nil
	}
	if req.CodeVerifier == "" {
		return WithDescription(ErrInvalidGrant, "code_verifier is required")
	}
	if !validVerifier(req.CodeVerifier) {
		return WithDescription(ErrInvalidGrant, "code_verifier must be 43 to 128 characters of [A-Za-z0-9-._~]")
	}
	if !pkceMatches(req.CodeVerifier, code.CodeChallenge) {
		return WithDescription(ErrInvalidGrant, "code_verifier does not match the code_challenge")
	}
	return nil
}

// validVerifier checks the RFC 7636 §4.1 code_verifier syntax.
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9',
			c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return true
}

// pkceMatches reports whether BASE64URL(SHA256(verifier)) equals the S256
// challenge (RFC 7636 §4.6), in constant time.
func pkceMatches(verifier, challenge string) bool {
	sum := sha256.Sum256([]byte(verifier))
	var enc [43]byte
	base64.RawURLEncoding.Encode(enc[:], sum[:])
	return subtle.ConstantTimeCompare(enc[:], []byte(challenge)) == 1
}

func (s *Server) newTokenResponse(access, refresh string, scopes []string, unrestricted bool, jkt string) tokenResponse {
	r := tokenResponse{AccessToken: access, RefreshToken: refresh, ExpiresIn: int64(s.cfg.AccessTTL / time.Second), DPoP: jkt != ""}
	if !unrestricted {
		r.Scope = scope.Join(scopes)
	}
	return r
}

// Header values of every token response.
var (
	hdrJSON    = []string{"application/json"}
	hdrNoStore = []string{"no-store"}
	hdrNoCache = []string{"no-cache"}
)

// writeTokenResponse writes r as JSON without reflection (the token
// endpoint is a hot path), with Cache-Control: no-store (RFC 6749 §5.1).
func writeTokenResponse(c echo.Context, r tokenResponse) error {
	bp := responseBufs.Get().(*[]byte)
	defer responseBufs.Put(bp)
	b := (*bp)[:0]
	b = append(b, `{"access_token":`...)
	b = appendJSONString(b, r.AccessToken)
	if r.RefreshToken != "" { // none for client_credentials (RFC 6749 §4.4.3)
		b = append(b, `,"refresh_token":`...)
		b = appendJSONString(b, r.RefreshToken)
	}
	if r.DPoP {
		b = append(b, `,"token_type":"DPoP","expires_in":`...)
	} else {
		b = append(b, `,"token_type":"bearer","expires_in":`...)
	}
	b = strconv.AppendInt(b, r.ExpiresIn, 10)
	if r.Scope != "" {
		b = append(b, `,"scope":`...)
		b = appendJSONString(b, r.Scope)
	}
	if r.IDToken != "" {
		b = append(b, `,"id_token":`...)
		b = appendJSONString(b, r.IDToken)
	}
	b = append(b, '}')
	// Direct assignment of shared, canonical-key values: no allocation per
	// response (net/http only reads them).
	h := c.Response().Header()
	h["Content-Type"] = hdrJSON
	h["Cache-Control"] = hdrNoStore
	h["Pragma"] = hdrNoCache
	c.Response().WriteHeader(http.StatusOK)
	_, err := c.Response().Write(b) // a Writer never keeps b
	if cap(b) <= 16<<10 {
		*bp = b[:0]
	}
	return err
}

// responseBufs are the token responses' buffers: the response is copied
// into net/http's own buffer by Write.
var responseBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// audit logs a security event. Never a secret, code or token. userID 0
// is an event without a user (a client acting for itself): it says
// subject=client instead of a user ID.
func (s *Server) audit(ctx context.Context, c echo.Context, event, clientID string, userID int64) {
	who := slog.Int64("user_id", userID)
	if userID == 0 {
		who = slog.String("subject", "client")
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "audit",
		slog.String("event", event),
		slog.String("client_id", clientID),
		who,
		slog.String("remote_addr", c.RealIP()))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
