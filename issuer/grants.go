package issuer

import (
	"context"
	"strings"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/keys/verify"
)

// grantHandler runs one grant of the token endpoint for an authenticated
// client (and its DPoP proof, nil without one).
type grantHandler func(s *Server, ctx context.Context, c echo.Context, client data.Client, req *tokenRequest, proof *verify.Proof) (tokenResponse, error)

// grant is one row of the table of grants: everything the server knows
// of a grant type, in one place. The token endpoint dispatches through
// it; the metadata's grant_types_supported, the metric labels and the
// per-client check (data.Client.AllowsGrant) read it.
type grant struct {
	// typ is the grant_type value (RFC 6749 §4, RFC 8628 §3.4).
	typ string
	// params are the parameters the grant requires (beyond grant_type and
	// client authentication); a missing one is invalid_request.
	params []string
	// handle runs the grant.
	handle grantHandler
}

// grants is the table of grants, in the order the metadata lists them.
// Every name of data.GrantTypes has a row, and only those
// (TestGrantTableMatchesData).
var grants = []grant{
	{typ: data.GrantAuthorizationCode, params: []string{"code", "redirect_uri"}, handle: (*Server).exchangeCode},
	{typ: data.GrantRefreshToken, params: []string{"refresh_token"}, handle: (*Server).refresh},
	{typ: data.GrantClientCredentials, handle: (*Server).clientCredentials},
	{typ: data.GrantDeviceCode, params: []string{"device_code"}, handle: (*Server).deviceGrant},
}

// grantOf returns the row of grant type gt, or nil.
func grantOf(gt string) *grant {
	for i := range grants {
		if grants[i].typ == gt {
			return &grants[i]
		}
	}
	return nil
}

// grantTypesSupported lists the table's grant types (RFC 8414 §2).
func grantTypesSupported() []string {
	out := make([]string, len(grants))
	for i, g := range grants {
		out[i] = g.typ
	}
	return out
}

// grantLabel bounds the grant_type metric label to the table's names
// (the device grant's URN shortened to device_code), "none" and "other".
func grantLabel(gt string) string {
	if gt == "" {
		return "none"
	}
	if g := grantOf(gt); g != nil {
		if i := strings.LastIndexByte(g.typ, ':'); i >= 0 {
			return g.typ[i+1:]
		}
		return g.typ
	}
	return "other"
}

// missingParam returns the first of g's required parameters that req
// lacks, or "".
func (g *grant) missingParam(req *tokenRequest) string {
	for _, p := range g.params {
		if req.Form.Get(p) == "" {
			return p
		}
	}
	return ""
}
