package issuer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
)

// Limits on the body of the token, revocation and introspection endpoints.
const (
	maxBodySize   = 64 << 10 // 64 KiB
	maxParamValue = 4096     // bytes, per parameter value (and name)
)

// tokenRequest holds the parameters of a POST to the token, revocation or
// introspection endpoint, after the checks of [parseTokenRequest]. An empty
// field means the parameter was absent or empty (RFC 6749 §3.1).
// Unrecognized parameters are ignored (RFC 6749 §3.2).
type tokenRequest struct {
	GrantType     string
	Code          string
	RedirectURI   string
	CodeVerifier  string
	RefreshToken  string
	Scope         string
	ClientID      string // from the body
	ClientSecret  string // from the body
	Token         string // revocation, introspection
	TokenTypeHint string
	// Resources are the resource parameters (RFC 8707 §2: the one
	// parameter that may repeat), in order.
	Resources []string

	// Basic is true when the request carried HTTP Basic credentials;
	// BasicID and BasicSecret are them, form-decoded (RFC 6749 §2.3.1).
	Basic       bool
	BasicID     string
	BasicSecret string

	// Form is every parameter of the body (the pushed authorization
	// request endpoint reads them all).
	Form url.Values
}

// set stores the value of the recognized parameter name.
func (t *tokenRequest) set(name, value string) {
	switch name {
	case "grant_type":
		t.GrantType = value
	case "code":
		t.Code = value
	case "redirect_uri":
		t.RedirectURI = value
	case "code_verifier":
		t.CodeVerifier = value
	case "refresh_token":
		t.RefreshToken = value
	case "scope":
		t.Scope = value
	case "client_id":
		t.ClientID = value
	case "client_secret":
		t.ClientSecret = value
	case "token":
		t.Token = value
	case "token_type_hint":
		t.TokenTypeHint = value
	case "resource":
		t.Resources = append(t.Resources, value)
	}
}

// credentialParams may never appear in the URL query (RFC 6749 §2.3.1,
// §3.2: credentials travel in the body).
var credentialParams = []string{"client_secret", "client_assertion", "code", "code_verifier", "refresh_token", "token", "device_code"}

func tokBadRequest(format string, args ...any) *Error {
	return WithDescription(ErrInvalidRequest, format, args...)
}

// parseTokenRequest reads and checks a POST to the token, revocation or
// introspection endpoint: the method, the Content-Type
// (application/x-www-form-urlencoded or application/json, charset UTF-8 if
// any), a body of at most 64 KiB (413 beyond), no credentials in the URL
// query, no parameter twice, values of valid UTF-8 without NUL and at most
// 4096 bytes, JSON values that are strings, and a well-formed Basic header.
// It never panics; every error is a 4xx *Error.
func parseTokenRequest(r *http.Request) (tokenRequest, *Error) {
	var req tokenRequest
	if r.Method != http.MethodPost {
		return req, &Error{Code: ErrInvalidRequest.Code, Description: "use POST", Status: http.StatusMethodNotAllowed}
	}
	if r.URL != nil && r.URL.RawQuery != "" {
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err == nil {
			for _, p := range credentialParams {
				if _, ok := q[p]; ok {
					return req, tokBadRequest("%s must be sent in the request body, never in the URL", p)
				}
			}
		} else {
			for _, p := range credentialParams {
				if strings.Contains(r.URL.RawQuery, p+"=") {
					return req, tokBadRequest("%s must be sent in the request body, never in the URL", p)
				}
			}
		}
	}
	isJSON, e := tokenContentType(r.Header.Get("Content-Type"))
	if e != nil {
		return req, e
	}
	if r.ContentLength > maxBodySize {
		return req, errBodyTooLarge
	}
	body, e := tokReadBody(r.Body)
	if e != nil {
		return req, e
	}
	if isJSON {
		e = parseJSONParams(body, &req)
	} else {
		e = parseFormParams(body, &req)
	}
	if e != nil {
		return req, e
	}
	if e := parseBasic(r.Header.Values("Authorization"), &req); e != nil {
		return req, e
	}
	return req, nil
}

// tokenContentType checks the media type and reports whether it is JSON.
func tokenContentType(ct string) (isJSON bool, e *Error) {
	const want = "the Content-Type must be application/x-www-form-urlencoded or application/json"
	if ct == "" {
		return false, tokBadRequest(want)
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return false, tokBadRequest(want)
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return false, tokBadRequest("the only Content-Type parameter accepted is charset=utf-8")
		}
	}
	switch mt {
	case "application/x-www-form-urlencoded":
		return false, nil
	case "application/json":
		return true, nil
	}
	return false, tokBadRequest(want)
}

// tokReadBody reads at most maxBodySize bytes of body; more is a 413.
func tokReadBody(body io.Reader) ([]byte, *Error) {
	if body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(body, maxBodySize+1))
	if err != nil {
		var mbe *http.MaxBytesError
		var he *echo.HTTPError
		if errors.As(err, &mbe) || (errors.As(err, &he) && he.Code == http.StatusRequestEntityTooLarge) {
			return nil, errBodyTooLarge
		}
		return nil, tokBadRequest("the request body could not be read")
	}
	if len(b) > maxBodySize {
		return nil, errBodyTooLarge
	}
	return b, nil
}

// tokCheckParam applies the per-parameter rules to a name and its value.
func tokCheckParam(name, value string) *Error {
	if len(name) > maxParamValue || !utf8.ValidString(name) || strings.IndexByte(name, 0) >= 0 {
		return tokBadRequest("a parameter name is too long, not UTF-8 or contains NUL")
	}
	if len(value) > maxParamValue {
		return tokBadRequest("parameter %s is longer than %d bytes", tokParamName(name), maxParamValue)
	}
	if !utf8.ValidString(value) {
		return tokBadRequest("parameter %s is not valid UTF-8", tokParamName(name))
	}
	if strings.IndexByte(value, 0) >= 0 {
		return tokBadRequest("parameter %s contains a NUL byte", tokParamName(name))
	}
	return nil
}

// tokParamName returns a parameter name fit for an error description: known
// names as they are, anything else elided (it is attacker-chosen).
func tokParamName(name string) string {
	switch name {
	case "grant_type", "code", "redirect_uri", "code_verifier", "refresh_token", "scope",
		"client_id", "client_secret", "token", "token_type_hint", "client_assertion", "client_assertion_type", "device_code", "resource":
		return name
	}
	return "(unrecognized)"
}

// parseFormParams parses an application/x-www-form-urlencoded body.
func parseFormParams(body []byte, req *tokenRequest) *Error {
	q, err := url.ParseQuery(string(body))
	if err != nil {
		return tokBadRequest("the form body is malformed")
	}
	for name, vs := range q {
		if len(vs) > 1 && name != "resource" {
			return tokBadRequest("parameter %s is given more than once", tokParamName(name))
		}
		for _, v := range vs {
			if e := tokCheckParam(name, v); e != nil {
				return e
			}
			req.set(name, v)
		}
	}
	req.Form = q
	return nil
}

// parseJSONParams parses a JSON object whose values are all strings, with
// no key twice.
func parseJSONParams(body []byte, req *tokenRequest) *Error {
	if !utf8.Valid(body) {
		return tokBadRequest("the JSON body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return tokBadRequest("the JSON body must be an object of string values")
	}
	seen := make(map[string]struct{}, 8)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return tokBadRequest("the JSON body is malformed")
		}
		name, ok := tok.(string)
		if !ok {
			return tokBadRequest("the JSON body is malformed")
		}
		if _, dup := seen[name]; dup {
			return tokBadRequest("parameter %s is given more than once", tokParamName(name))
		}
		seen[name] = struct{}{}
		tok, err = dec.Token()
		if err != nil {
			return tokBadRequest("the JSON body is malformed")
		}
		value, ok := tok.(string)
		if !ok {
			return tokBadRequest("parameter %s must be a JSON string", tokParamName(name))
		}
		if e := tokCheckParam(name, value); e != nil {
			return e
		}
		req.set(name, value)
		if req.Form == nil {
			req.Form = url.Values{}
		}
		req.Form.Set(name, value)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return tokBadRequest("the JSON body is malformed")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return tokBadRequest("the JSON body has data after the object")
	}
	return nil
}

// parseBasic reads HTTP Basic client credentials (RFC 7617), whose user
// and password are form-urlencoded (RFC 6749 §2.3.1).
func parseBasic(auth []string, req *tokenRequest) *Error {
	if len(auth) == 0 {
		return nil
	}
	if len(auth) > 1 {
		return tokBadRequest("the Authorization header is given more than once")
	}
	a := auth[0]
	if len(a) < 6 || !strings.EqualFold(a[:6], "basic ") {
		return tokBadRequest("the only Authorization scheme accepted here is Basic")
	}
	bad := WithDescription(ErrInvalidClient, "malformed HTTP Basic credentials")
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(a[6:]))
	if err != nil {
		return bad
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return bad
	}
	id, err1 := url.QueryUnescape(user)
	secret, err2 := url.QueryUnescape(pass)
	if err1 != nil || err2 != nil || id == "" {
		return bad
	}
	if tokCheckParam("client_id", id) != nil || tokCheckParam("client_secret", secret) != nil {
		return bad
	}
	req.Basic, req.BasicID, req.BasicSecret = true, id, secret
	return nil
}
