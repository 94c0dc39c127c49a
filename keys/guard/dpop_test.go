package guard

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"oauthd/keys/verify"
	"oauthd/keys/verify/dpoptest"
)

// boundVerifier accepts "bound" (cnf.jkt of key) and "plain" (no cnf).
type boundVerifier struct{ jkt string }

func (b boundVerifier) Verify(_ context.Context, token string) (*verify.Claims, error) {
	switch token {
	case "bound":
		return &verify.Claims{Subject: "7", ClientID: "spa", Scopes: []string{"PROFILE_READ"}, JKT: b.jkt}, nil
	case "plain":
		return &verify.Claims{Subject: "7", ClientID: "app", Scopes: []string{"PROFILE_READ"}}, nil
	}
	return nil, errors.New("invalid")
}

// TestGuardDPoP: RFC 9449 §7 at the guard, with PublicURL deciding htu.
func TestGuardDPoP(t *testing.T) {
	k := dpoptest.NewES256()
	const public = "https://api.example.com"
	g := New(Config{Verifier: boundVerifier{k.JKT()}, Logger: slog.New(slog.DiscardHandler), PublicURL: public + "/"})
	call := func(authz, proof string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "http://10.0.0.1:8080/v2/me?x=1", nil)
		req.Header.Set("Authorization", authz)
		if proof != "" {
			req.Header.Set("DPoP", proof)
		}
		rec := httptest.NewRecorder()
		g.HTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })).ServeHTTP(rec, req)
		return rec
	}
	htu := public + "/v2/me"
	if rec := call("DPoP bound", k.Proof("GET", htu, "bound")); rec.Code != http.StatusOK {
		t.Fatalf("bound token with its proof = %d %s", rec.Code, rec.Body)
	}
	replay := k.Proof("GET", htu, "bound")
	call("DPoP bound", replay)
	for name, tc := range map[string]struct {
		authz, proof, www string
	}{
		"as Bearer":             {"Bearer bound", "", `DPoP error="invalid_token"`},
		"no proof":              {"DPoP bound", "", `DPoP error="invalid_dpop_proof"`},
		"replayed proof":        {"DPoP bound", replay, `DPoP error="invalid_dpop_proof"`},
		"another key":           {"DPoP bound", dpoptest.NewES256().Proof("GET", htu, "bound"), `DPoP error="invalid_dpop_proof"`},
		"htu of the upstream":   {"DPoP bound", k.Proof("GET", "http://10.0.0.1:8080/v2/me", "bound"), `DPoP error="invalid_dpop_proof"`},
		"wrong method":          {"DPoP bound", k.Proof("POST", htu, "bound"), `DPoP error="invalid_dpop_proof"`},
		"ath of another token":  {"DPoP bound", k.Proof("GET", htu, "plain"), `DPoP error="invalid_dpop_proof"`},
		"unbound token as DPoP": {"DPoP plain", k.Proof("GET", htu, "plain"), `Bearer error="invalid_token"`},
		"invalid token as DPoP": {"DPoP nope", k.Proof("GET", htu, "nope"), `DPoP error="invalid_token"`},
	} {
		rec := call(tc.authz, tc.proof)
		if rec.Code != http.StatusUnauthorized || !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), tc.www) {
			t.Errorf("%s: %d %q; want 401 %s", name, rec.Code, rec.Header().Get("WWW-Authenticate"), tc.www)
		}
		if strings.HasPrefix(tc.www, "DPoP") && !strings.Contains(rec.Header().Get("WWW-Authenticate"), `algs="ES256 EdDSA Ed25519"`) {
			t.Errorf("%s: challenge %q has no algs", name, rec.Header().Get("WWW-Authenticate"))
		}
	}
	if rec := call("Bearer plain", ""); rec.Code != http.StatusOK {
		t.Errorf("plain bearer token = %d", rec.Code)
	}
}

// downNonces is a replay store that cannot be reached.
type downNonces struct{}

func (downNonces) UseNonce(context.Context, []byte, time.Time) error {
	return errors.New("dial tcp: connection refused")
}

// TestGuardDPoPStoreDown: when the replay store does not answer, a bound
// token's request is 503 temporarily_unavailable with Retry-After, not a
// refusal of the token.
func TestGuardDPoPStoreDown(t *testing.T) {
	k := dpoptest.NewES256()
	g := New(Config{Verifier: boundVerifier{k.JKT()}, Logger: slog.New(slog.DiscardHandler), PublicURL: "https://api.example.com",
		DPoP: verify.NewDPoP(verify.DPoPConfig{Nonces: downNonces{}})})
	req := httptest.NewRequest(http.MethodGet, "http://10.0.0.1/v2/me", nil)
	req.Header.Set("Authorization", "DPoP bound")
	req.Header.Set("DPoP", k.Proof("GET", "https://api.example.com/v2/me", "bound"))
	rec := httptest.NewRecorder()
	g.HTTP(http.NotFoundHandler()).ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), `"temporarily_unavailable"`) {
		t.Errorf("store down = %d Retry-After %q %s; want 503 temporarily_unavailable with Retry-After", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
}
