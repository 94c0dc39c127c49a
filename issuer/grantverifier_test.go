package issuer

import (
	"errors"
	"net/http"
	"testing"

	"oauthd/keys/verify"
)

// TestGrantVerifier: a token passes while its grant stands and fails as
// an invalid token once the grant is revoked; an unbound verifier refuses
// everything; a bad token fails with the wrapped verifier's error.
func TestGrantVerifier(t *testing.T) {
	env := newTkEnv(t)
	v, err := verify.New(verify.Config{Issuer: tkIssuer, Keys: env.signer, Now: env.clock})
	if err != nil {
		t.Fatal(err)
	}
	tok := env.exchange()
	g := NewGrantVerifier(v)
	if _, err := g.Verify(t.Context(), tok.AccessToken); !errors.Is(err, verify.ErrInvalidToken) {
		t.Errorf("unbound Verify = %v; want ErrInvalidToken", err)
	}
	g.Bind(env.s)
	c, err := g.Verify(t.Context(), tok.AccessToken)
	if err != nil || c.ClientID != "conf" {
		t.Fatalf("Verify of a live grant's token = %+v, %v; want its claims", c, err)
	}
	if _, err := g.Verify(t.Context(), tok.AccessToken+"x"); !errors.Is(err, verify.ErrInvalidToken) {
		t.Errorf("Verify of a bad signature = %v; want ErrInvalidToken", err)
	}
	rec := env.do(tkReq{path: "/v2/auth/oauth2/revoke", body: tkForm("token", tok.RefreshToken, "client_id", "conf", "client_secret", env.secretA)})
	if rec.Code != http.StatusOK {
		t.Fatalf("revoke: %d", rec.Code)
	}
	if _, err := v.Verify(t.Context(), tok.AccessToken); err != nil {
		t.Fatalf("the signature check alone still passes (%v); the test needs it to", err)
	}
	if _, err := g.Verify(t.Context(), tok.AccessToken); !errors.Is(err, verify.ErrInvalidToken) {
		t.Errorf("Verify after the grant was revoked = %v; want ErrInvalidToken", err)
	}
}
