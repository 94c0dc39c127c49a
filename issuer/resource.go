package issuer

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
)

// Resource indicators (RFC 8707), in one place:
//
//   - Config.Resources lists the APIs (absolute URIs, serve --resource)
//     whose tokens this server issues; a resource parameter naming anything
//     else is invalid_target, at the authorization endpoint (by redirect)
//     and at the token endpoint.
//   - The authorization request's resources are remembered with the code
//     (data.AuthCode.Resources) and then with the grant
//     (data.Family.Resources): refresh keeps them.
//   - A token request may repeat them or name fewer (narrowing); one the
//     grant does not have is invalid_target. Without resource it gets all of
//     the grant's.
//   - An access token's aud is its resources; a grant without resources
//     keeps Config.Audience, as before.

// MaxResources bounds the resource parameters of one request (and the
// resources of one grant).
const MaxResources = 10

// CheckResources checks the configured resources (Config.Resources, serve
// --resource): absolute http(s) URIs without fragment (RFC 8707 §2), each
// once.
func CheckResources(rs []string) error {
	if len(rs) > 100 {
		return errors.New("at most 100 resources")
	}
	for i, r := range rs {
		if err := checkResourceURI(r); err != nil {
			return fmt.Errorf("resource %q: %w", r, err)
		}
		if slices.Contains(rs[:i], r) {
			return fmt.Errorf("resource %q is listed twice", r)
		}
	}
	return nil
}

// checkResourceURI is RFC 8707 §2's rule for a resource indicator: an
// absolute URI without fragment; oauthd's APIs are http(s) URLs.
func checkResourceURI(r string) error {
	u, err := url.Parse(r)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" || u.User != nil:
		return errors.New("must be an absolute http(s) URL with a host")
	case u.Scheme != "https" && u.Scheme != "http":
		return errors.New("must use https (or http)")
	case u.Fragment != "" || u.RawFragment != "" || len(r) > 0 && r[len(r)-1] == '#':
		return errors.New("must not have a fragment (RFC 8707 §2)")
	case len(r) > 2000:
		return errors.New("longer than 2000 bytes")
	}
	return nil
}

// requestedResources checks the resource parameters of a request (vals,
// possibly repeated) against the configured resources and returns them
// without duplicates, in order; nil when there are none. Matching is byte
// for byte: a resource is named as the operator configured it.
func (s *Server) requestedResources(vals []string) ([]string, *Error) {
	if len(vals) == 0 {
		return nil, nil
	}
	if len(vals) > MaxResources {
		return nil, WithDescription(ErrInvalidTarget, "at most %d resource parameters", MaxResources)
	}
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		if !slices.Contains(s.cfg.Resources, v) {
			if checkResourceURI(v) != nil {
				return nil, WithDescription(ErrInvalidTarget, "resource must be an absolute URI without fragment (RFC 8707)")
			}
			return nil, WithDescription(ErrInvalidTarget, "resource %s is not an API this server issues tokens for", authzQuote(v))
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// tokenResources returns the resources of a token issued from a grant
// whose resources are granted: those the token request named, rs (as
// requestedResources returned them, before the store's transaction), each
// one the grant must have; or, without resource (nil), all of the grant's.
func tokenResources(rs, granted []string) ([]string, *Error) {
	if rs == nil {
		return granted, nil
	}
	for _, r := range rs {
		if !slices.Contains(granted, r) {
			return nil, WithDescription(ErrInvalidTarget, "resource %s was not part of the authorization; the user must authorize it", authzQuote(r))
		}
	}
	return rs, nil
}
