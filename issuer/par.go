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
//     first use records the request_uri as used (data.Store.UseNonce, on
//     every replica) and turns it into a consent continuation that the
//     login and consent pages carry for parConsentTTL (a user may take
//     longer than a minute to log in); Approve or Deny use the
//     continuation up, so one pushed request yields at most one code or
//     one denial, and a second use of either is refused.
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
)

// pushedParams are the authorization request parameters a pushed request
// keeps.
var pushedParams = []string{"client_id", "redirect_uri", "scope", "state", "code_challenge", "code_challenge_method", "response_type"}

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
	nonce := make([]byte, s.par.NonceSize(), s.par.NonceSize()+len(plain)+s.par.Overhead())
	rand.Read(nonce)
	return prefix + base64.RawURLEncoding.EncodeToString(s.par.Seal(nonce, nonce, plain, []byte(parAAD+prefix)))
}

func (s *Server) openPushed(uri string) (pushedRequest, bool) {
	var p pushedRequest
	prefix := parURIPrefix
	if strings.HasPrefix(uri, parConsentURI) {
		prefix = parConsentURI
	} else if !strings.HasPrefix(uri, parURIPrefix) {
		return p, false
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(uri[len(prefix):])
	if err != nil || len(raw) < s.par.NonceSize()+s.par.Overhead() {
		return p, false
	}
	ns := s.par.NonceSize()
	plain, err := s.par.Open(nil, raw[:ns], raw[ns:], []byte(parAAD+prefix))
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
		switch err := s.store.UseNonce(ctx, nonceKey(parNonceRequest, p.ID), exp); {
		case errors.Is(err, data.ErrExists):
			return bad("This authorization request was already used. Go back to the application and start again.")
		case err != nil:
			return nil, nil, fmt.Errorf("authorize: use request_uri: %w", err)
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
