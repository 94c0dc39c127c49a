package issuer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"oauthd/data"
)

const (
	rsMCP = "https://mcp.example.com/mcp"
	rsCal = "https://calendar.example.com/"
)

func newResourceEnv(t *testing.T) *tkEnv {
	return newTkEnv(t, func(c *Config) { c.Resources = []string{rsMCP, rsCal} })
}

// resourceCode seeds a code of client conf with resources.
func (env *tkEnv) resourceCode(resources ...string) string {
	env.t.Helper()
	code := data.NewAuthCode(time.Now())
	err := env.store.CreateAuthCode(context.Background(), data.AuthCode{
		Hash: data.AuthCodeKey(code), ClientID: "conf", UserID: tkUser, RedirectURI: tkRedirect,
		Scopes: []string{"PROFILE_READ"}, Resources: resources, CreatedAt: env.clock(), ExpiresAt: env.clock().Add(time.Minute),
	})
	if err != nil {
		env.t.Fatal(err)
	}
	return code
}

// tokenAud returns the aud claim of a JWT (unverified: the other tests
// check signatures), always as a list.
func tokenAud(t *testing.T, jwt string) []string {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Aud json.RawMessage `json:"aud"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	var one string
	if json.Unmarshal(c.Aud, &one) == nil {
		return []string{one}
	}
	var many []string
	if err := json.Unmarshal(c.Aud, &many); err != nil {
		t.Fatalf("aud %s: %v", c.Aud, err)
	}
	return many
}

func TestResourceAuthorizeRequest(t *testing.T) {
	env := newResourceEnv(t)
	ctx := context.Background()
	q := url.Values{"client_id": {"conf"}, "redirect_uri": {tkRedirect}, "response_type": {"code"}, "scope": {"PROFILE_READ"}, "state": {"s"}}
	with := func(rs ...string) url.Values {
		v := cloneValues(q)
		v["resource"] = rs
		return v
	}
	req, err := env.s.CheckAuthorize(ctx, with(rsMCP, rsCal, rsMCP))
	if err != nil {
		t.Fatalf("two resources, one repeated: %v", err)
	}
	if !slices.Equal(req.Resources, []string{rsMCP, rsCal}) {
		t.Errorf("Resources = %q; want both, once each, in order", req.Resources)
	}
	if req, err := env.s.CheckAuthorize(ctx, q); err != nil || req.Resources != nil {
		t.Errorf("without resource: %v, %q; want no resources", err, req.Resources)
	}
	for _, bad := range []string{"https://other.example.com/", rsMCP + "/", "https://MCP.example.com/mcp", "urn:x", rsMCP + "#f", "not a uri"} {
		_, err := env.s.CheckAuthorize(ctx, with(rsMCP, bad))
		re, ok := errors.AsType[*RedirectError](err)
		if !ok || re.Err.Code != "invalid_target" || !strings.HasPrefix(re.URL, tkRedirect+"?") || !strings.Contains(re.URL, "state=s") {
			t.Errorf("resource %q: err = %v; want an invalid_target redirect with state", bad, err)
		}
	}
	// The remembered resources reach the code.
	loc, err := env.s.Approve(ctx, with(rsCal), tkUser)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(loc)
	code := u.Query().Get("code")
	tok := env.mustTokens(env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code,
		"redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)}))
	if aud := tokenAud(t, tok.AccessToken); !slices.Equal(aud, []string{rsCal}) {
		t.Errorf("aud = %q; want the authorized resource", aud)
	}
}

func cloneValues(q url.Values) url.Values {
	v := url.Values{}
	for k, vs := range q {
		v[k] = slices.Clone(vs)
	}
	return v
}

func TestResourceTokenRequests(t *testing.T) {
	env := newResourceEnv(t)
	exchange := func(code string, resources ...string) *tkTokens {
		kv := []string{"grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA}
		body := tkForm(kv...)
		for _, r := range resources {
			body += "&resource=" + url.QueryEscape(r)
		}
		rec := env.do(tkReq{body: body})
		if rec.Code != 200 {
			if c := tkOAuthErr(t, rec); c != "invalid_target" {
				t.Errorf("error %s; want invalid_target", rec.Body)
			}
			return nil
		}
		tok := env.mustTokens(rec)
		return &tok
	}
	// Without resource: all the grant's; aud is an array for two.
	tok := exchange(env.resourceCode(rsMCP, rsCal))
	if aud := tokenAud(t, tok.AccessToken); !slices.Equal(aud, []string{rsMCP, rsCal}) {
		t.Errorf("aud = %q; want both resources", aud)
	}
	// Narrowed at the token request.
	if tok := exchange(env.resourceCode(rsMCP, rsCal), rsMCP); tok == nil || !slices.Equal(tokenAud(t, tok.AccessToken), []string{rsMCP}) {
		t.Errorf("narrowed exchange: want aud [%s]", rsMCP)
	}
	// Widening, an unknown resource, and a resource on a code without any:
	// invalid_target, and the code is not spent.
	code := env.resourceCode(rsMCP)
	if exchange(code, rsCal) != nil || exchange(code, "https://evil.example.com/") != nil {
		t.Error("widening or unknown resource accepted")
	}
	plain := env.resourceCode()
	if exchange(plain, rsMCP) != nil {
		t.Error("a resource the authorization did not name was accepted")
	}
	if tok := exchange(plain); tok == nil || !slices.Equal(tokenAud(t, tok.AccessToken), []string{tkIssuer}) {
		t.Errorf("without resources: want aud [%s] as before", tkIssuer)
	}
	// Refresh keeps the grant's resources, may narrow, never widens.
	tok = exchange(code)
	if tok == nil {
		t.Fatal("exchange after the refused tries failed")
	}
	r1 := env.mustTokens(env.do(env.refreshReq("conf", env.secretA, tok.RefreshToken)))
	if aud := tokenAud(t, r1.AccessToken); !slices.Equal(aud, []string{rsMCP}) {
		t.Errorf("refresh: aud = %q; want the grant's [%s]", aud, rsMCP)
	}
	rec := env.do(env.refreshReq("conf", env.secretA, r1.RefreshToken, "resource", rsCal))
	if rec.Code != 400 || tkOAuthErr(t, rec) != "invalid_target" {
		t.Errorf("refresh widening resource: %d %s; want 400 invalid_target", rec.Code, rec.Body)
	}
	r2 := env.mustTokens(env.do(env.refreshReq("conf", env.secretA, r1.RefreshToken, "resource", rsMCP)))
	if aud := tokenAud(t, r2.AccessToken); !slices.Equal(aud, []string{rsMCP}) {
		t.Errorf("refresh naming its resource: aud = %q", aud)
	}
}

func TestResourceConfigAndMetadata(t *testing.T) {
	for _, bad := range [][]string{{"mcp.example.com"}, {"https://x.example.com/#f"}, {"ftp://x.example.com/"}, {rsMCP, rsMCP}} {
		if err := CheckResources(bad); err == nil {
			t.Errorf("CheckResources(%q) = nil; want an error", bad)
		}
	}
	env := newResourceEnv(t)
	rec := env.do(tkReq{method: "GET", path: "/.well-known/oauth-authorization-server"})
	var m struct {
		ProtectedResources []string `json:"protected_resources"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || !slices.Equal(m.ProtectedResources, []string{rsMCP, rsCal}) {
		t.Errorf("protected_resources = %q (%v); want the configured resources (RFC 9728 §4)", m.ProtectedResources, err)
	}
	if env := newTkEnv(t); strings.Contains(env.do(tkReq{method: "GET", path: "/.well-known/oauth-authorization-server"}).Body.String(), "protected_resources") {
		t.Error("protected_resources listed without resources")
	}
}

// TestResourceOtherGrants: a resource parameter (RFC 8707 §2) is never
// ignored. A client_credentials token asked for an API is for that API
// (aud), one this server does not issue for is invalid_target; a device
// code's grant has no resources, so its authorization request or a poll
// naming one is invalid_target (the poll spends nothing). Both grants
// used to drop the parameter and issue a token of the default audience,
// valid at every API, to a client that asked for one API.
func TestResourceOtherGrants(t *testing.T) {
	mutate := func(c *Config) { c.Resources = []string{rsMCP, rsCal} }
	env := ccEnvWith(t, mutate)
	const evil = "https://evil.example/"
	tok := env.mustTokens(env.do(ccReq(env, "machine", env.secretA, "resource", rsMCP)))
	if aud := tokenAud(t, tok.AccessToken); !slices.Equal(aud, []string{rsMCP}) {
		t.Errorf("client_credentials with resource %s: aud = %v", rsMCP, aud)
	}
	tok = env.mustTokens(env.do(ccReq(env, "machine", env.secretA)))
	if aud := tokenAud(t, tok.AccessToken); slices.Contains(aud, rsMCP) {
		t.Errorf("client_credentials without resource: aud = %v; want the default audience", aud)
	}
	if rec := env.do(ccReq(env, "machine", env.secretA, "resource", evil)); tkOAuthErr(t, rec) != "invalid_target" {
		t.Errorf("client_credentials with resource %s: %d %s; want invalid_target", evil, rec.Code, rec.Body)
	}

	denv := devEnv(t, mutate)
	for _, rs := range []string{rsMCP, evil} {
		rec := denv.do(devReq("198.51.100.7:1", "client_id", "tv", "scope", "BOOKING_READ", "resource", rs))
		if tkOAuthErr(t, rec) != "invalid_target" {
			t.Errorf("device authorization with resource %s: %d %s; want invalid_target", rs, rec.Code, rec.Body)
		}
	}
	d := denv.deviceAuth("scope", "BOOKING_READ")
	if err := denv.s.ApproveDevice(context.Background(), d.UserCode, Login{UserID: tkUser}); err != nil {
		t.Fatal(err)
	}
	for _, rs := range []string{rsMCP, evil} {
		req := pollReq("tv", d.DeviceCode)
		req.body += "&" + tkForm("resource", rs)
		if rec := denv.do(req); tkOAuthErr(t, rec) != "invalid_target" {
			t.Errorf("device poll with resource %s: %d %s; want invalid_target", rs, rec.Code, rec.Body)
		}
	}
	denv.mustTokens(denv.do(pollReq("tv", d.DeviceCode)))
}
