package guard

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"oauthd/keys/verify"
)

// revokedVerifier refuses every token as of a revoked grant named by the
// token itself, as verify.Verifier does with a revoked-grants feed.
type revokedVerifier struct{}

func (revokedVerifier) Verify(_ context.Context, token string) (*verify.Claims, error) {
	return nil, fmt.Errorf("%w: %w", verify.ErrInvalidToken, &verify.GrantError{GrantID: token, Err: verify.ErrGrantRevoked})
}

// TestRevokedGrant: a token of a revoked grant is 401 invalid_token whose
// description says "grant revoked"; the refusal is logged once per grant,
// not per request.
func TestRevokedGrant(t *testing.T) {
	var logs bytes.Buffer
	g := New(Config{Verifier: revokedVerifier{}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for range 5 {
		for _, grant := range []string{"grantA", "grantB"} {
			res := do(t, g, "GET", "/v2/me", "Bearer "+grant)
			if res.status != http.StatusUnauthorized || res.body["error"] != "invalid_token" ||
				!strings.HasPrefix(res.body["error_description"].(string), "grant revoked") ||
				!strings.HasPrefix(res.www, `Bearer error="invalid_token", error_description="grant revoked`) {
				t.Fatalf("revoked grant: %d %q %v", res.status, res.www, res.body)
			}
		}
	}
	for _, grant := range []string{"grantA", "grantB"} {
		if n := strings.Count(logs.String(), "grant_id="+grant); n != 1 {
			t.Errorf("grant %s logged %d times in 5 refusals; want once\n%s", grant, n, logs.String())
		}
	}
}
