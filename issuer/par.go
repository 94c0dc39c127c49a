package issuer

import (
	"context"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/crypto/chacha20poly1305"

	"oauthd/data"
	"oauthd/issuer/throttle"
	"oauthd/keys/verify"
)

// Pushed authorization requests (RFC 9126), in one place:
//   - POST /v2/auth/oauth2/par authenticates the client like the token
//     endpoint (a public client sends its client_id), validates the
//     parameters exactly as the authorization endpoint would (same code:
//     authzValidate), and answers 201 with a request_uri that lives
//     parRequestTTL (expires_in). Errors are JSON (RFC 9126 §2.3).
//   - The request_uri is the pushed request sealed (XChaCha20-Poly1305)
//     under a key derived from the refresh-token key that every replica
//     shares: nobody can read, forge or alter it, any replica can open it,
//     and nothing is stored until it is used.
//   - The authorization endpoint accepts request_uri with client_id and
//     nothing else (mixing pushed and query parameters is refused). The
//     first use turns it into a consent continuation that the login and
//     consent pages carry for parConsentTTL (a user may take longer than
//     a minute to log in); Approve or Deny use the continuation up
//     (data.Store.UseNonce, on every replica), so one pushed request
//     yields at most one code or one denial, and a second use of either
//     is refused.
//   - Nothing an unauthenticated caller sends is stored: a public
//     client's push needs only its (public) client_id, and a browser with
//     no session may follow the request_uri. So the first use before
//     login is recorded in this replica's bounded memory (parSeen; a
//     second use there is refused), and durably only once a user is
//     signed in (the consent page: UseNonce of the request_uri) and at
//     the decision. Across replicas a request_uri may thus yield two
//     continuations before login; the decision's nonce still allows one
//     code or denial.
//   - A public client's pushes are limited per source address
//     (parLimits), never per client: a request_uri is sealed, so a flood
//     of valid pushes costs nothing durable and no memory, and a cap per
//     client would let anyone with a few dozen addresses refuse every
//     user of the app its sign-in (an app that requires PAR has no
//     other way in). A confidential client authenticates and is not
//     limited here.
//   - A client with require_pushed_authorization_requests must come
//     through the endpoint.

const (
	parPath         = "/v2/auth/oauth2/par"
	parURIPrefix    = "urn:ietf:params:oauth:request_uri:"
	parConsentURI   = "urn:oauthd:consent:"
	parRequestTTL   = 60 * time.Second
	parConsentTTL   = 10 * time.Minute
	parNonceRequest = "par-request\x00"
	parNonceConsent = "par-consent\x00"
	parAAD          = "oauthd pushed authorization request v1"
	// parSeenMax bounds the request_uris whose first use is remembered
	// in memory (≈150 bytes each). When full, the oldest is forgotten:
	// the decision's nonce still holds.
	parSeenMax = 1 << 16
)

// parLimits limit a public client's pushes per source address: 30 at
// once, then one every 2 s.
var parLimits = throttle.Rules{throttle.Addr: {Burst: 30, Every: 2 * time.Second}}

// parState is a server's memory of pushed requests (par.go).
type parState struct {
	aead    cipher.AEAD
	limiter *throttle.Limiter    // public clients' pushes per address
	seen    *verify.MemoryNonces // request_uris used before login
}

func newPARState(cfg Config) *parState {
	return &parState{
		aead:    newPARSealer(cfg.RefreshTokenKey),
		limiter: throttle.New(throttle.Config{Name: "par", Rules: parLimits, Now: cfg.Now, Registerer: cfg.Registerer}),
		seen:    verify.NewMemoryNoncesFilter(parSeenMax, cfg.Now),
	}
}

// pushedParams are the authorization request parameters a pushed request
// keeps.
var pushedParams = []string{"client_id", "redirect_uri", "scope", "state", "code_challenge", "code_challenge_method", "response_type", "resource",
	// OpenID Connect (Core §3.1.2.1)
	"nonce", "prompt", "max_age", "login_hint", "id_token_hint", "response_mode"}

// isPushedURI reports whether uri is one of ours: a pushed request's
// request_uri or its consent continuation. Any other request_uri is a
// request object by reference, which is not supported.
func isPushedURI(uri string) bool {
	return strings.HasPrefix(uri, parURIPrefix) || strings.HasPrefix(uri, parConsentURI)
}

// pushedRequest is what a request_uri (or a consent continuation) seals.
type pushedRequest struct {
	ID       string `json:"i"` // random; keys the single use
	ClientID string `json:"c"`
	Exp      int64  `json:"e"` // Unix seconds
	Consent  bool   `json:"k,omitempty"`
	Params   string `json:"p"` // the pushed parameters, form-encoded
}

// newPARSealer derives the sealing key from the refresh-token key.
func newPARSealer(refreshKey []byte) cipher.AEAD {
	m := hmac.New(sha256.New, refreshKey)
	m.Write([]byte("oauthd PAR request_uri sealing key v1"))
	aead, err := chacha20poly1305.NewX(m.Sum(nil))
	if err != nil {
		panic("issuer: PAR sealer: " + err.Error()) // a 32-byte key cannot fail
	}
	return aead
}

func (s *Server) sealPushed(p pushedRequest, prefix string) string {
	plain, _ := json.Marshal(p) // strings and numbers cannot fail
	aead := s.par.aead
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	rand.Read(nonce)
	return prefix + base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, []byte(parAAD+prefix)))
}

func (s *Server) openPushed(uri string) (pushedRequest, bool) {
	var p pushedRequest
	prefix := parURIPrefix
	if strings.HasPrefix(uri, parConsentURI) {
		prefix = parConsentURI
	} else if !strings.HasPrefix(uri, parURIPrefix) {
		return p, false
	}
	aead := s.par.aead
	raw, err := base64.RawURLEncoding.Strict().DecodeString(uri[len(prefix):])
	if err != nil || len(raw) < aead.NonceSize()+aead.Overhead() {
		return p, false
	}
	ns := aead.NonceSize()
	plain, err := aead.Open(nil, raw[:ns], raw[ns:], []byte(parAAD+prefix))
	if err != nil || json.Unmarshal(plain, &p) != nil || p.Consent != (prefix == parConsentURI) {
		return pushedRequest{}, false
	}
	return p, true
}

// handlePAR is POST /v2/auth/oauth2/par (RFC 9126 §2).
func (s *Server) handlePAR(c echo.Context) error {
	uri, err := s.push(c)
	if err != nil {
		return writeOAuthError(c, toOAuthError(c, s.log, s.cfg.Outage, err))
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, map[string]any{"request_uri": uri, "expires_in": int64(parRequestTTL / time.Second)})
}

func (s *Server) push(c echo.Context) (string, error) {
	ctx := c.Request().Context()
	req, perr := parseTokenRequest(c.Request())
	if perr != nil {
		return "", perr
	}
	client, err := s.authenticateClient(ctx, c, &req)
	if err != nil {
		return "", err
	}
	if client.Type == data.Public {
		if err := s.admitPush(c); err != nil {
			return "", err
		}
	}
	switch {
	case req.Form.Has("request_uri"):
		return "", tokBadRequest("request_uri must not be pushed (RFC 9126 §2.1)")
	case req.Form.Has("request"):
		return "", WithDescription(ErrRequestNotSupported, "request objects are not supported; push the parameters themselves")
	}
	// Only the parameters the authorization endpoint reads are sealed
	// (others are ignored, RFC 6749 §3.1): the request_uri stays short.
	q := url.Values{}
	for _, k := range pushedParams {
		if v, ok := req.Form[k]; ok {
			q[k] = v
		}
	}
	q.Set("client_id", client.ID) // a Basic-authenticated client may leave it out
	if _, err := s.authzValidate(ctx, q, modePush); err != nil {
		// A page or redirect error carries the OAuth error to answer
		// with (invalid_request, invalid_scope, unsupported_response_type:
		// all 400); anything else is a server error.
		if oe, ok := errors.AsType[*Error](err); ok {
			return "", oe
		}
		return "", err
	}
	var id [16]byte
	rand.Read(id[:])
	return s.sealPushed(pushedRequest{
		ID:       base64.RawURLEncoding.EncodeToString(id[:]),
		ClientID: client.ID,
		Exp:      s.now().Add(parRequestTTL).Unix(),
		Params:   q.Encode(),
	}, parURIPrefix), nil
}

// admitPush applies a public client's push limit: per source address
// (parLimits).
func (s *Server) admitPush(c echo.Context) error {
	ctx := c.Request().Context()
	var ks throttle.Keys
	ks.Add(throttle.AddrKey(throttle.ParseAddr(c.RealIP())))
	if wait, ok := s.par.limiter.Check(ctx, ks); !ok {
		return tooManyPushes(wait, "too many pushed authorization requests from this address")
	}
	s.par.limiter.Fail(ctx, ks) // counts the push
	return nil
}

// tooManyPushes is the 429 of a limited push.
func tooManyPushes(wait time.Duration, why string) *Error {
	secs := max(1, int((wait+time.Second-1)/time.Second))
	e := WithDescription(ErrTooManyRequests, "%s; retry after %d seconds", why, secs)
	e.retryAfter = secs
	return e
}

// resolvePushed turns an authorization request by reference (client_id
// and request_uri) into the pushed parameters, and returns with them the
// query the consent pages carry on (a consent continuation).
func (s *Server) resolvePushed(ctx context.Context, q url.Values, mode authzMode) (pushed, cont url.Values, err error) {
	bad := func(msg string) (url.Values, url.Values, error) {
		return nil, nil, NewPageError("Invalid authorization request", msg)
	}
	if len(q["request_uri"]) != 1 || len(q["client_id"]) != 1 {
		return bad("An authorization request with request_uri carries exactly one client_id and one request_uri. The application that sent you here must fix its authorization link.")
	}
	for k := range q {
		if k != "client_id" && k != "request_uri" {
			return bad("An authorization request with request_uri carries only client_id and request_uri; the other parameters were pushed (RFC 9126 §4). The application that sent you here must fix its authorization link.")
		}
	}
	p, ok := s.openPushed(q.Get("request_uri"))
	now := s.now()
	if !ok || p.ClientID != q.Get("client_id") {
		return bad("The request_uri is not valid for this application. Go back to the application and start again.")
	}
	if now.Unix() >= p.Exp {
		return bad("The authorization request has expired. Go back to the application and start again.")
	}
	exp := time.Unix(p.Exp, 0)
	if !p.Consent {
		const used = "This authorization request was already used. Go back to the application and start again."
		key := nonceKey(parNonceRequest, p.ID)
		// First in this replica's memory (a full cache forgets its
		// oldest: the decision's nonce still holds) ...
		if err := s.par.seen.UseNonce(ctx, key, exp); errors.Is(err, data.ErrExists) {
			return bad(used)
		}
		// ... and durably once a user is signed in (not before login:
		// nothing an unauthenticated caller sends is stored).
		if mode != modeCheck {
			switch err := s.store.UseNonce(ctx, key, exp); {
			case errors.Is(err, data.ErrExists):
				return bad(used)
			case err != nil:
				return nil, nil, fmt.Errorf("authorize: use request_uri: %w", err)
			}
		}
		c := p
		c.Consent = true
		c.Exp = now.Add(parConsentTTL).Unix()
		exp = time.Unix(c.Exp, 0)
		cont = url.Values{"client_id": {p.ClientID}, "request_uri": {s.sealPushed(c, parConsentURI)}}
	} else {
		cont = q
	}
	if mode == modeDecide {
		switch err := s.store.UseNonce(ctx, nonceKey(parNonceConsent, p.ID), exp); {
		case errors.Is(err, data.ErrExists):
			return bad("This authorization was already completed. Go back to the application and start again.")
		case err != nil:
			return nil, nil, fmt.Errorf("authorize: use request_uri: %w", err)
		}
	}
	pushed, err = url.ParseQuery(p.Params)
	if err != nil {
		return bad("The request_uri is not valid for this application. Go back to the application and start again.")
	}
	return pushed, cont, nil
}

// nonceKey is the store key of a one-time value of kind.
func nonceKey(kind, id string) []byte {
	h := sha256.Sum256([]byte(kind + id))
	return h[:]
}
