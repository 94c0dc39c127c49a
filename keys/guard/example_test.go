package guard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"oauthd/keys/guard"
	"oauthd/keys/verify"
)

// staticVerifier stands in for a *verify.Verifier: it knows two tokens.
type staticVerifier map[string]*verify.Claims

func (v staticVerifier) Verify(_ context.Context, token string) (*verify.Claims, error) {
	if c, ok := v[token]; ok {
		return c, nil
	}
	return nil, verify.ErrInvalidToken
}

func ExampleGuard_HTTP() {
	g := guard.New(guard.Config{
		// In production: verify.New(verify.Config{Issuer: ..., Keys: verify.NewRemoteKeySet(...)}).
		Verifier: staticVerifier{
			"profile-token":  {Subject: "42", ClientID: "app", Scopes: []string{"PROFILE_READ"}},
			"schedule-token": {Subject: "42", ClientID: "app", Scopes: []string{"SCHEDULE_READ"}},
		},
		// Table: nil uses guard.DefaultTable(), the routes of the scheduling API.
	})
	api := g.HTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := guard.ClaimsFrom(r.Context())
		fmt.Fprintf(w, "hello user %s", c.Subject)
	}))

	for _, token := range []string{"", "profile-token", "schedule-token"} {
		req := httptest.NewRequest("GET", "/v2/me", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		if www := rec.Header().Get("WWW-Authenticate"); www != "" {
			fmt.Println(rec.Code, www)
		} else {
			fmt.Println(rec.Code, rec.Body.String())
		}
	}
	// Output:
	// 401 Bearer
	// 200 hello user 42
	// 403 Bearer error="insufficient_scope", scope="PROFILE_READ"
}

func ExampleTable_Match() {
	t := guard.DefaultTable()
	r, _ := t.Match("GET", "/v2/organizations/1/teams/me")
	fmt.Println(r.Path, r.Scopes)
	r, _ = t.Match("GET", "/v2/organizations/1/teams/2")
	fmt.Println(r.Path, r.Scopes)
	r, _ = t.Match("GET", "/v2/slots")
	fmt.Println(r.Path, r.Public)
	_, ok := t.Match("GET", "/v2/not-a-route")
	fmt.Println(ok)
	// Output:
	// /v2/organizations/{orgId}/teams/me [ORG_PROFILE_READ]
	// /v2/organizations/{orgId}/teams/{teamId} [TEAM_PROFILE_READ]
	// /v2/slots true
	// false
}
