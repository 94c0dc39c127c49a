package data

import "slices"

// The grant types (RFC 6749 §4, RFC 8628 §3.4) a client may be allowed
// ([Client.GrantTypes]). issuer's table of grants has a handler for each
// name here, and only for these (TestGrantTableMatchesData).
const (
	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"
	GrantClientCredentials = "client_credentials"
	GrantDeviceCode        = "urn:ietf:params:oauth:grant-type:device_code"
)

// GrantTypes are the grant types a client record may list, in the order
// they are shown.
var GrantTypes = []string{GrantAuthorizationCode, GrantRefreshToken, GrantClientCredentials, GrantDeviceCode}

// DefaultGrantTypes are the grant types of a client whose record lists
// none: every client made before grant types were recorded, and a new
// client that asks for none.
var DefaultGrantTypes = []string{GrantAuthorizationCode, GrantRefreshToken}

// KnownGrantType reports whether gt is one of [GrantTypes].
func KnownGrantType(gt string) bool { return slices.Contains(GrantTypes, gt) }

// AllowedGrantTypes returns the grant types c may use: c.GrantTypes, or
// [DefaultGrantTypes] when the record lists none. Every check of a
// client's grant types reads it.
func (c Client) AllowedGrantTypes() []string {
	if len(c.GrantTypes) == 0 {
		return DefaultGrantTypes
	}
	return c.GrantTypes
}

// AllowsGrant reports whether c may use grant type gt.
func (c Client) AllowsGrant(gt string) bool { return slices.Contains(c.AllowedGrantTypes(), gt) }

// validateGrantTypes checks c.GrantTypes: known names, none twice, the
// client_credentials grant only for a confidential client (RFC 6749
// §4.4), and a client ID that cannot read as a user ID for a client that
// may hold tokens without a user (their sub is the client ID, RFC 9068
// §2.2, and a user's sub is a decimal number).
func validateGrantTypes(c Client) error {
	for i, gt := range c.GrantTypes {
		if !KnownGrantType(gt) {
			return ruleErr("grant_types", "%q is not a grant type; use one of %v", gt, GrantTypes)
		}
		if slices.Contains(c.GrantTypes[:i], gt) {
			return ruleErr("grant_types", "%q is listed twice", gt)
		}
	}
	if c.AllowsGrant(GrantClientCredentials) {
		if c.Type != Confidential {
			return ruleErr("grant_types", "client_credentials is for confidential clients only (RFC 6749 §4.4)")
		}
		if isDecimal(c.ID) {
			return ruleErr("grant_types", "client_credentials needs a client ID that is not a number (its tokens' sub is the client ID, and a user's sub is a number)")
		}
	}
	return nil
}

func isDecimal(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ExpandGrantType returns the grant type that gt names: gt itself, or
// for the short name device_code the device grant's URN (RFC 8628 §3.4),
// which the CLI and forms accept for it.
func ExpandGrantType(gt string) string {
	if gt == "device_code" {
		return GrantDeviceCode
	}
	return gt
}
