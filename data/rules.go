package data

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"oauthd/data/scope"
)

// RuleError says which rule a record breaks. It unwraps to [ErrInvalid].
type RuleError struct {
	Field  string // e.g. "redirect_uris"
	Reason string // a sentence that says what to do
}

func (e *RuleError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap returns [ErrInvalid].
func (e *RuleError) Unwrap() error { return ErrInvalid }

func ruleErr(field, format string, args ...any) error {
	return &RuleError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// MaxNameLen bounds client and user names.
const MaxNameLen = 200

// MaxClientIDLen bounds a client ID given from outside (a legacy import);
// the settings pages take no longer one.
const MaxClientIDLen = 200

// ValidateClientID checks a client ID oauthd did not make (clients import):
// 1 to [MaxClientIDLen] visible ASCII characters (RFC 6749 Appendix A.1,
// VSCHAR without the space). A client ID is shown in URLs, on the consent
// and Connected apps pages and in the CLI: a newline, a bidi override or a
// look-alike letter would make it read as another one, and a longer one
// could not be removed on the Connected apps page.
func ValidateClientID(id string) error {
	if id == "" || len(id) > MaxClientIDLen {
		return ruleErr("client_id", "must be 1 to %d characters", MaxClientIDLen)
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return ruleErr("client_id", "%q holds a character other than visible ASCII at byte %d (RFC 6749 Appendix A.1)", id, i+1)
		}
	}
	return nil
}

// ValidateRedirectURI checks one redirect URI: absolute, https (or http on a
// loopback host, RFC 8252 §7.3), no fragment (RFC 6749 §3.1.2), no user
// info, no space, control or invisible formatting character (Unicode
// categories Cc, Cf and White_Space, so also NEL, NBSP, U+2028 and bidi
// overrides), at most 2000 bytes.
func ValidateRedirectURI(raw string) error {
	if raw == "" || len(raw) > 2000 || !utf8.ValidString(raw) {
		return ruleErr("redirect_uri", "%q is not a valid URI (empty, longer than 2000 bytes or not UTF-8)", raw)
	}
	for _, r := range raw {
		if r < 0x21 || r == 0x7f || unicode.IsControl(r) || unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) {
			return ruleErr("redirect_uri", "%q contains a space or control character", raw)
		}
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return ruleErr("redirect_uri", "%q is not an absolute URI with a host", raw)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return ruleErr("redirect_uri", "%q has a fragment; redirect URIs must not (RFC 6749 §3.1.2)", raw)
	}
	if u.User != nil {
		return ruleErr("redirect_uri", "%q carries user info; remove it", raw)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !IsLoopback(u.Hostname()) {
			return ruleErr("redirect_uri", "%q uses http; use https (http is allowed only on loopback hosts)", raw)
		}
	default:
		return ruleErr("redirect_uri", "%q must use https (or http on a loopback host)", raw)
	}
	return nil
}

// IsLoopback reports whether host is localhost or a loopback IP.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// MaxJWKS bounds a client's inline JWK set.
const MaxJWKS = 64 << 10

// validJWKSURI checks a jwks_uri: https, a host, no user info or fragment.
func validJWKSURI(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && len(raw) <= 2000 && u.Scheme == "https" && u.Host != "" && u.User == nil && u.Fragment == "" && !strings.ContainsAny(raw, " \t\r\n")
}

// ValidateClient checks the rules every stored client obeys.
func ValidateClient(c Client) error {
	if c.ID == "" {
		return ruleErr("client_id", "must not be empty")
	}
	if strings.TrimSpace(c.Name) == "" || len(c.Name) > MaxNameLen || !utf8.ValidString(c.Name) {
		return ruleErr("name", "must be 1 to %d bytes of UTF-8", MaxNameLen)
	}
	switch {
	case c.MetadataHost != "":
		if err := validateMetadataClient(c); err != nil {
			return err
		}
	case c.OwnerID < 0 || (c.OwnerID == 0) == (strings.TrimSpace(c.UnclaimedOwner) == ""):
		return ruleErr("owner", "must be the ID of the user who owns the client, or (unclaimed) the owner as given, not both")
	}
	switch c.Type {
	case Confidential, Public:
	default:
		return ruleErr("client_type", "%q is neither confidential nor public", c.Type)
	}
	if err := validateGrantTypes(c); err != nil {
		return err
	}
	if err := validateRedirectURIs(c); err != nil {
		return err
	}
	if len(c.Scopes) > 0 || !c.Legacy {
		if err := validateScopes(c.Scopes); err != nil {
			return err
		}
	}
	if err := validateStatus(c); err != nil {
		return err
	}
	if err := validateCredentials(c); err != nil {
		return err
	}
	if c.Pending != nil {
		if err := validatePending(c); err != nil {
			return err
		}
	}
	return nil
}

// validateRedirectURIs checks a client's redirect URIs and post-logout
// redirect URIs: each valid and listed once, at most [MaxRedirectURIs],
// and at least one when the client uses the authorization_code grant.
func validateRedirectURIs(c Client) error {
	if len(c.RedirectURIs) == 0 && c.AllowsGrant(GrantAuthorizationCode) {
		return ruleErr("redirect_uris", "at least one redirect URI is required (for the authorization_code grant)")
	}
	if err := validateURIList("redirect_uris", "redirect_uri", c.RedirectURIs); err != nil {
		return err
	}
	return validateURIList("post_logout_redirect_uris", "post_logout_redirect_uris", c.PostLogoutRedirectURIs)
}

// validateURIList checks the redirect URIs of field: at most
// [MaxRedirectURIs], each valid ([ValidateRedirectURI], its error on
// itemField) and listed once.
func validateURIList(field, itemField string, uris []string) error {
	if len(uris) > MaxRedirectURIs {
		return ruleErr(field, "%d given; a client has at most %d", len(uris), MaxRedirectURIs)
	}
	for i, u := range uris {
		if err := ValidateRedirectURI(u); err != nil {
			if re, ok := err.(*RuleError); ok && re.Field != itemField {
				return &RuleError{Field: itemField, Reason: re.Reason}
			}
			return err
		}
		if slices.Contains(uris[:i], u) {
			return ruleErr(field, "%q is listed twice", u)
		}
	}
	return nil
}

// validateScopes checks a list of scopes a client or an assistants' host
// is allowed: at least one, each known ([scope.Known]) and listed once.
func validateScopes(scopes []string) error {
	if len(scopes) == 0 {
		return ruleErr("scopes", "at least one scope is required")
	}
	for i, s := range scopes {
		if !scope.Known(s) {
			return ruleErr("scopes", "%q is not a scope; see the scope list in docs/SCOPES.md", s)
		}
		if slices.Contains(scopes[:i], s) {
			return ruleErr("scopes", "%q is listed twice", s)
		}
	}
	return nil
}

// validateStatus checks a client's status: a rejection has its reason.
func validateStatus(c Client) error {
	switch c.Status {
	case StatusPending, StatusApproved:
	case StatusRejected:
		if strings.TrimSpace(c.RejectReason) == "" {
			return ruleErr("reason", "a rejection needs a reason")
		}
	default:
		return ruleErr("status", "%q is not a client status", c.Status)
	}
	return nil
}

// validateCredentials checks how a client authenticates: a confidential
// client by its secrets (at most [MaxActiveSecrets], IDs unique) or its
// keys (inline or by URL, not both, nor with a secret); a public client
// by neither.
func validateCredentials(c Client) error {
	switch {
	case len(c.Secrets) > MaxActiveSecrets:
		return fmt.Errorf("%w: revoke one first", ErrTooManySecrets)
	case c.HasKeys() && c.Type != Confidential:
		return ruleErr("jwks", "only a confidential client authenticates with keys (private_key_jwt)")
	case c.HasKeys() && len(c.Secrets) > 0:
		return ruleErr("secrets", "a client with keys (private_key_jwt) authenticates with them and cannot also hold a secret")
	case c.JWKS != "" && c.JWKSURI != "":
		return ruleErr("jwks", "give the keys inline (jwks) or by URL (jwks_uri), not both")
	case len(c.JWKS) > MaxJWKS:
		return ruleErr("jwks", "the JWK set is larger than %d bytes", MaxJWKS)
	case c.JWKS != "" && !json.Valid([]byte(c.JWKS)):
		return ruleErr("jwks", "the JWK set is not JSON")
	case c.JWKSURI != "" && !validJWKSURI(c.JWKSURI):
		return ruleErr("jwks_uri", "%q must be an https URL with a host, without user info or fragment, at most 2000 bytes", c.JWKSURI)
	case c.Type == Confidential && len(c.Secrets) == 0 && !c.HasKeys():
		return ErrLastSecret
	case c.Type == Public && len(c.Secrets) > 0:
		return ruleErr("secrets", "a public client has no secret")
	}
	for i, cs := range c.Secrets {
		if slices.ContainsFunc(c.Secrets[:i], func(o ClientSecret) bool { return o.ID == cs.ID }) {
			return ruleErr("secrets", "secret ID %q is listed twice", cs.ID)
		}
	}
	return nil
}

// validatePending checks c.Pending: only an approved client has one (a
// client under review takes its owner's edits directly); it adds something
// the client does not have, and the client with it applied
// ([Client.WithPending]) obeys every rule.
func validatePending(c Client) error {
	p := c.Pending
	if c.Status != StatusApproved {
		return ruleErr("pending", "only an approved client can have a pending change; a client that is %s takes its owner's edits directly", c.Status)
	}
	if len(p.AddScopes) == 0 && len(p.AddRedirectURIs) == 0 && len(p.AddPostLogoutRedirectURIs) == 0 && len(p.AddGrantTypes) == 0 && p.Type == "" && !p.DropDPoPBound && !p.DropRequirePAR {
		return ruleErr("pending", "a pending change must add a scope, a redirect URI or a grant type, change the client type or turn a protection off")
	}
	if (p.DropDPoPBound && !c.DPoPBoundAccessTokens) || (p.DropRequirePAR && !c.RequirePAR) {
		return ruleErr("pending", "a pending change can turn off only a protection the client has")
	}
	if strings.TrimSpace(p.ProposedBy) == "" || p.ProposedAt.IsZero() {
		return ruleErr("pending", "a pending change must say who proposed it and when")
	}
	if p.RejectReason != "" {
		return ruleErr("pending", "a pending change has no rejection reason")
	}
	if c.Legacy && len(p.AddScopes) > 0 {
		return ruleErr("pending", "a legacy client gets scopes only by migration, which applies at once")
	}
	for _, s := range p.AddScopes {
		if slices.Contains(c.Scopes, s) {
			return ruleErr("pending", "scope %s is already approved", s)
		}
	}
	for _, u := range p.AddRedirectURIs {
		if slices.Contains(c.RedirectURIs, u) {
			return ruleErr("pending", "redirect URI %q is already approved", u)
		}
	}
	for _, gt := range p.AddGrantTypes {
		if c.AllowsGrant(gt) {
			return ruleErr("pending", "grant type %s is already approved", gt)
		}
	}
	for _, u := range p.AddPostLogoutRedirectURIs {
		if slices.Contains(c.PostLogoutRedirectURIs, u) {
			return ruleErr("pending", "post-logout redirect URI %q is already approved", u)
		}
	}
	switch {
	case p.Type == "":
		if p.Secret != nil {
			return ruleErr("pending", "a pending secret goes only with a change to a confidential client")
		}
	case p.Type == c.Type:
		return ruleErr("pending", "the client is already %s", c.Type)
	case p.Type == Confidential && p.Secret == nil:
		return ruleErr("pending", "a change to a confidential client needs the secret it will have")
	case p.Type == Public && p.Secret != nil:
		return ruleErr("pending", "a public client has no secret")
	}
	next := c.WithPending()
	if len(next.RedirectURIs) > MaxRedirectURIs {
		return ruleErr("redirect_uris", "the approved and the pending redirect URIs together are %d; a client has at most %d: approve or reject the pending change first", len(next.RedirectURIs), MaxRedirectURIs)
	}
	if len(next.PostLogoutRedirectURIs) > MaxRedirectURIs {
		return ruleErr("post_logout_redirect_uris", "the approved and the pending post-logout redirect URIs together are %d; a client has at most %d: approve or reject the pending change first", len(next.PostLogoutRedirectURIs), MaxRedirectURIs)
	}
	if err := ValidateClient(next); err != nil {
		if re, ok := err.(*RuleError); ok {
			return &RuleError{Field: re.Field, Reason: "in the pending change: " + re.Reason}
		}
		return fmt.Errorf("pending change: %w", err)
	}
	return nil
}

// ValidateClientChange checks that next may follow old: the ID and
// creation time never change; the type of an approved client changes only
// by the approval of its pending change (a client under review takes its
// owner's edits directly); a client never becomes legacy again or goes
// back to pending, and the status moves only pending → approved | rejected,
// approved → rejected, or rejected → approved.
func ValidateClientChange(old, next Client) error {
	if next.ID != old.ID || !next.CreatedAt.Equal(old.CreatedAt) {
		return ruleErr("client", "the client ID and creation time cannot change")
	}
	if next.Type != old.Type && old.Status == StatusApproved && (old.Pending == nil || old.Pending.Type != next.Type) {
		return ruleErr("client_type", "the type of an approved client changes only when an administrator approves the change")
	}
	if next.Legacy && !old.Legacy {
		return ruleErr("legacy", "a scoped client cannot become legacy again")
	}
	if old.Status != next.Status && next.Status == StatusPending {
		return fmt.Errorf("%w: client %s is %s and cannot go back to pending", ErrConflict, old.ID, old.Status)
	}
	return nil
}

// ValidateKeySet checks the rules every stored signing-key set obeys: each key
// has a unique, non-empty kid and a known state, and at most one key is
// active.
func ValidateKeySet(keys []SigningKey) error {
	active := 0
	for i, k := range keys {
		if k.KID == "" {
			return ruleErr("kid", "a signing key needs a kid")
		}
		for _, o := range keys[:i] {
			if o.KID == k.KID {
				return ruleErr("kid", "%q is used by two keys", k.KID)
			}
		}
		switch k.State {
		case KeyActive:
			active++
		case KeyNext, KeyRetired, KeySecret:
		default:
			return ruleErr("state", "%q is not a key state", k.State)
		}
	}
	if active > 1 {
		return ruleErr("state", "%d active keys; at most one key is active", active)
	}
	return nil
}

// RedirectURIMatches reports whether the redirect_uri of an authorization
// request, presented, is one of registered: byte for byte (RFC 6749
// §3.1.2.3, RFC 9700 §4.1.3), except that for a public client (public
// true) a registered loopback IP literal URI, http://127.0.0.1/… or
// http://[::1]/…, matches the same URI with any port (RFC 8252 §7.3: a
// native app listens on an ephemeral port). Nothing else is normalised:
// "localhost" stays exact (RFC 8252 §8.3), and so do the scheme's and the
// address's spelling.
func RedirectURIMatches(registered []string, presented string, public bool) bool {
	if slices.Contains(registered, presented) {
		return true
	}
	if !public {
		return false
	}
	p, ok := loopbackWithoutPort(presented)
	if !ok {
		return false
	}
	for _, r := range registered {
		if q, ok := loopbackWithoutPort(r); ok && q == p {
			return true
		}
	}
	return false
}

// loopbackWithoutPort returns uri without its port when it is an http URI
// on the loopback IP literal 127.0.0.1 or [::1], spelled exactly so; ok is
// false otherwise. A port is 1 to 5 digits, 1 to 65535, followed by the
// end, '/' or '?'.
func loopbackWithoutPort(uri string) (string, bool) {
	for _, prefix := range [...]string{"http://127.0.0.1", "http://[::1]"} {
		rest, ok := strings.CutPrefix(uri, prefix)
		if !ok {
			continue
		}
		if port, ok := strings.CutPrefix(rest, ":"); ok {
			n := 0
			for n < len(port) && port[n] >= '0' && port[n] <= '9' {
				n++
			}
			if n == 0 || n > 5 || port[0] == '0' {
				return "", false
			}
			v := 0
			for _, c := range port[:n] {
				v = v*10 + int(c-'0')
			}
			if v > 65535 {
				return "", false
			}
			rest = port[n:]
		}
		if rest != "" && rest[0] != '/' && rest[0] != '?' {
			return "", false
		}
		return prefix + rest, true
	}
	return "", false
}

// validateMetadataClient checks the rules of an AI assistant's client
// (one with [Client.MetadataHost]): its ID is a metadata document's URL on
// that host, it is public, has no owner and nothing waits for review.
func validateMetadataClient(c Client) error {
	host, err := MetadataClientHost(c.ID)
	switch {
	case err != nil:
		return err
	case host != c.MetadataHost:
		return ruleErr("metadata_host", "%q is not the host of the client ID %q", c.MetadataHost, c.ID)
	case c.Type != Public:
		return ruleErr("client_type", "a client of a metadata document is public")
	case c.OwnerID != 0 || c.UnclaimedOwner != "":
		return ruleErr("owner", "a client of a metadata document has no owner: its host's review decides")
	case c.Pending != nil || c.Legacy:
		return ruleErr("pending", "a client of a metadata document has no pending change and is not legacy")
	}
	return nil
}

// ValidateAuthCode checks a new authorization code as
// [Store.CreateAuthCode] and [Store.CreateConsentedCode] store it: under
// its hash ([AuthCodeKey]).
func ValidateAuthCode(c AuthCode) error {
	if len(c.Hash) == 0 {
		return ruleErr("hash", "an authorization code needs its hash")
	}
	return nil
}

// ValidateSession checks a new session as [Store.CreateSession] stores
// it: under its hash.
func ValidateSession(s Session) error {
	if len(s.Hash) == 0 {
		return ruleErr("hash", "a session needs its hash")
	}
	return nil
}
