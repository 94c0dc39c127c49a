package issuer

import (
	"context"
	"errors"
	"testing"

	"oauthd/data"
)

// TestAuthorizeLoopbackAnyPort: RFC 8252 §7.3 for a public client, and
// the port trick refused for a confidential one.
func TestAuthorizeLoopbackAnyPort(t *testing.T) {
	env := newAuthzEnv(t)
	ctx := context.Background()
	c := data.Client{ID: "desktop", Name: "Desktop Assistant", OwnerID: 1, Type: data.Public,
		RedirectURIs: []string{"http://127.0.0.1/callback", "http://[::1]/callback"},
		Scopes:       []string{"PROFILE_READ"}, Status: data.StatusApproved, CreatedAt: authzT0, UpdatedAt: authzT0}
	if err := env.store.CreateClient(ctx, c); err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{"http://127.0.0.1:51234/callback", "http://[::1]:40000/callback", "http://127.0.0.1/callback"} {
		req, err := env.s.CheckAuthorize(ctx, authzQuery("client_id", "desktop", "redirect_uri", uri, "response_type", "code",
			"scope", "PROFILE_READ", "code_challenge", authzTestChallenge, "code_challenge_method", "S256"))
		if err != nil {
			t.Fatalf("public client, %s: %v", uri, err)
		}
		if req.RedirectURI != uri {
			t.Errorf("RedirectURI = %q; want the presented %q (the code is bound to it)", req.RedirectURI, uri)
		}
	}
	for _, uri := range []string{"http://localhost:51234/callback", "http://127.0.0.1:51234/callback/x", "http://127.0.0.1:51234/callback?a=b"} {
		_, err := env.s.CheckAuthorize(ctx, authzQuery("client_id", "desktop", "redirect_uri", uri, "response_type", "code",
			"scope", "PROFILE_READ", "code_challenge", authzTestChallenge))
		if pe, ok := errors.AsType[*PageError](err); !ok || pe.Title != "Unregistered redirect URI" {
			t.Errorf("public client, %s: err = %v; want the Unregistered redirect URI page", uri, err)
		}
	}
	// The attacker's try: a confidential client registered
	// http://127.0.0.1:8400/cb; another port on the same machine is not it.
	_, err := env.s.CheckAuthorize(ctx, authzQuery("client_id", "conf", "redirect_uri", "http://127.0.0.1:8401/cb",
		"response_type", "code", "scope", "PROFILE_READ"))
	if pe, ok := errors.AsType[*PageError](err); !ok || pe.Title != "Unregistered redirect URI" {
		t.Errorf("confidential client on another loopback port: err = %v; want the Unregistered redirect URI page", err)
	}
	if _, err := env.s.CheckAuthorize(ctx, authzQuery("client_id", "conf", "redirect_uri", "http://127.0.0.1:8400/cb",
		"response_type", "code", "scope", "PROFILE_READ")); err != nil {
		t.Errorf("confidential client on its own port: %v", err)
	}
}
