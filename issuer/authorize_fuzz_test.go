package issuer

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// FuzzParseAuthorize checks the invariants of authorization-request
// validation on arbitrary queries: it never panics, every error is a
// *PageError or a *RedirectError, and a redirect only ever goes to a
// redirect URI registered for the named client (RFC 6749 §10.15).
func FuzzParseAuthorize(f *testing.F) {
	for _, seed := range []string{
		"client_id=conf&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcallback&response_type=code&scope=PROFILE_READ&state=xyz",
		"client_id=conf&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcb%3Ftenant%3D7&scope=PROFILE_READ+BOOKING_READ&state=a%26b",
		"client_id=conf&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcallback&scope=PROFILE_READ,NOPE&state=s",
		"client_id=conf&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcallback%2F&scope=PROFILE_READ",
		"client_id=conf&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcallback&scope=PROFILE_READ&state=1&state=2",
		"client_id=conf&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcallback&scope=PROFILE_READ&code_challenge_method=plain&code_challenge=abc",
		"client_id=pub&redirect_uri=https%3A%2F%2Fpub.example.com%2Fcb&scope=PROFILE_READ&code_challenge=" + authzTestChallenge + "&code_challenge_method=S256",
		"client_id=pub&redirect_uri=https%3A%2F%2Fpub.example.com%2Fcb&scope=PROFILE_READ",
		"client_id=legacy&redirect_uri=https%3A%2F%2Fold.example.com%2Fcb",
		"client_id=legacy&redirect_uri=https%3A%2F%2Fold.example.com%2Fcb&scope=EVERYTHING&state=%00",
		"client_id=pending&redirect_uri=https%3A%2F%2Fnew.example.com%2Fcb&scope=PROFILE_READ",
		"client_id=migrated&redirect_uri=https%3A%2F%2Fmig.example.com%2Fcb",
		"client_id=conf&redirect_uri=javascript%3Aalert(1)&scope=PROFILE_READ",
		"client_id=conf&client_id=pub&redirect_uri=https%3A%2F%2Fpub.example.com%2Fcb",
		"response_type=token&client_id=conf&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcallback&scope=PROFILE_READ",
		"",
	} {
		f.Add(seed)
	}
	env := newAuthzEnv(f)
	registered := map[string][]string{}
	for _, c := range authzTestClients() {
		registered[c.ID] = c.RedirectURIs
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, _ := url.ParseQuery(raw) // keep what parses, as net/http does
		req, err := env.s.ParseAuthorize(context.Background(), q)
		uris := registered[q.Get("client_id")]
		if err == nil {
			if req == nil || !slices.Contains(uris, req.RedirectURI) || req.RedirectURI != q.Get("redirect_uri") {
				t.Fatalf("ParseAuthorize(%q) accepted redirect_uri %q; registered: %q", raw, req.RedirectURI, uris)
			}
			return
		}
		if _, ok := errors.AsType[*PageError](err); ok {
			return
		}
		re, ok := errors.AsType[*RedirectError](err)
		if !ok {
			t.Fatalf("ParseAuthorize(%q) error %T %v; want *PageError or *RedirectError", raw, err, err)
		}
		if !slices.ContainsFunc(uris, func(u string) bool { return strings.HasPrefix(re.URL, u) }) {
			t.Fatalf("ParseAuthorize(%q) redirects to %q; registered: %q", raw, re.URL, uris)
		}
		// It is the request's own redirect_uri, which matched exactly.
		if ru := q.Get("redirect_uri"); !slices.Contains(uris, ru) || !strings.HasPrefix(re.URL, ru) ||
			(re.URL[len(ru)] != '?' && re.URL[len(ru)] != '&') {
			t.Fatalf("redirect %q does not continue the request's registered redirect_uri %q with a query", re.URL, ru)
		}
		if re.Err.Code == "" {
			t.Fatalf("RedirectError without a code: %q", re.URL)
		}
	})
}
