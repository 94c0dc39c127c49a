package issuer

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/data/memory"
	"oauthd/keys/guard"
	"oauthd/keys/verify"
)

// meRouter returns an Echo router with the issuer's routes, where MeAuth
// is a fake guard that puts *claims (when not nil) into the context.
func meRouter(t *testing.T, claims **verify.Claims) *echo.Echo {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	ctx := context.Background()
	if _, err := store.CreateUser(ctx, data.User{Email: "ada@example.com", Username: "ada", Name: "Ada Lovelace",
		TimeZone: "Europe/Berlin", PasswordHash: "$argon2id$x", CreatedAt: authzT0}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []data.Client{
		{ID: "conf", Type: data.Public, Scopes: []string{"PROFILE_READ"}, Status: data.StatusApproved},
		{ID: "legacy", Type: data.Public, Legacy: true, Status: data.StatusApproved},
		{ID: "rejected", Type: data.Public, Scopes: []string{"PROFILE_READ"}, Status: data.StatusRejected, RejectReason: "spam"},
	} {
		c.Name, c.OwnerID, c.RedirectURIs, c.CreatedAt, c.UpdatedAt = "App", 1, []string{"https://app.example.com/cb"}, authzT0, authzT0
		if err := store.CreateClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	// A live grant of user 1 to conf: the family "fam-live".
	if err := store.CreateAuthCode(ctx, data.AuthCode{Hash: data.Hash("code"), ClientID: "conf", UserID: 1, ExpiresAt: authzT0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.ExchangeAuthCode(ctx, data.Hash("code"), func(c data.AuthCode) (data.Family, error) {
		return data.Family{ID: "fam-live", ClientID: "conf", UserID: 1, Scopes: []string{"PROFILE_READ"}, TokenHash: data.Hash("rt"),
			ExpiresAt: authzT0.Add(time.Hour), AbsoluteExp: authzT0.Add(time.Hour)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	fakeGuard := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if *claims != nil {
				r := c.Request()
				c.SetRequest(r.WithContext(guard.WithClaims(r.Context(), *claims)))
			}
			return next(c)
		}
	}
	s, err := New(Config{Store: store, Signer: authzFakeSigner{}, Verifier: authzFakeVerifier{}, MeAuth: fakeGuard,
		Logger: slog.New(slog.DiscardHandler), Issuer: authzTestIssuer})
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	s.Register(e)
	return e
}

func TestMe(t *testing.T) {
	const ada = `{"status":"success","data":{"id":1,"email":"ada@example.com","username":"ada","name":"Ada Lovelace","timeZone":"Europe/Berlin"}}`
	tests := []struct {
		name       string
		claims     *verify.Claims
		wantStatus int
		wantBody   string // exact JSON for 200; the error code otherwise
		wantAuth   string // WWW-Authenticate
	}{
		{"profile scope", &verify.Claims{Subject: "1", ClientID: "conf", Scopes: []string{"BOOKING_READ", "PROFILE_READ"}}, http.StatusOK, ada, ""},
		{"live grant", &verify.Claims{Subject: "1", ClientID: "conf", GrantID: "fam-live", Scopes: []string{"PROFILE_READ"}}, http.StatusOK, ada, ""},
		{"revoked grant", &verify.Claims{Subject: "1", ClientID: "conf", GrantID: "fam-gone", Scopes: []string{"PROFILE_READ"}},
			http.StatusUnauthorized, "invalid_token", `Bearer error="invalid_token"`},
		{"grant of another client", &verify.Claims{Subject: "1", ClientID: "legacy", GrantID: "fam-live", Unrestricted: true},
			http.StatusUnauthorized, "invalid_token", `Bearer error="invalid_token"`},
		{"grant of another user", &verify.Claims{Subject: "2", ClientID: "conf", GrantID: "fam-live", Scopes: []string{"PROFILE_READ"}},
			http.StatusUnauthorized, "invalid_token", `Bearer error="invalid_token"`},
		{"rejected client", &verify.Claims{Subject: "1", ClientID: "rejected", Scopes: []string{"PROFILE_READ"}},
			http.StatusUnauthorized, "invalid_token", `Bearer error="invalid_token"`},
		{"unknown client", &verify.Claims{Subject: "1", ClientID: "gone", Scopes: []string{"PROFILE_READ"}},
			http.StatusUnauthorized, "invalid_token", `Bearer error="invalid_token"`},
		{"unrestricted legacy token", &verify.Claims{Subject: "1", ClientID: "legacy", Unrestricted: true}, http.StatusOK, ada, ""},
		{"no claims", nil, http.StatusUnauthorized, "invalid_token", `Bearer error="invalid_token"`},
		{"unknown user", &verify.Claims{Subject: "2", ClientID: "conf", Scopes: []string{"PROFILE_READ"}}, http.StatusUnauthorized, "invalid_token", `Bearer error="invalid_token"`},
		{"non-numeric subject", &verify.Claims{Subject: "ada", ClientID: "conf", Scopes: []string{"PROFILE_READ"}}, http.StatusUnauthorized, "invalid_token", `Bearer error="invalid_token"`},
		{"zero subject", &verify.Claims{Subject: "0", ClientID: "conf", Scopes: []string{"PROFILE_READ"}}, http.StatusUnauthorized, "invalid_token", `Bearer error="invalid_token"`},
		{"wrong scope (guard bypassed)", &verify.Claims{Subject: "1", ClientID: "conf", Scopes: []string{"PROFILE_WRITE"}}, http.StatusForbidden, "insufficient_scope",
			`Bearer error="insufficient_scope", scope="PROFILE_READ"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			claims := tc.claims
			e := meRouter(t, &claims)
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/v2/me", nil)
			req.Header.Set("Authorization", "Bearer x") // the fake guard's claims stand for it; no token at all: TestMeErrorWire
			e.ServeHTTP(rec, req)
			if rec.Code != tc.wantStatus {
				t.Fatalf("status = %d; want %d (body %s)", rec.Code, tc.wantStatus, rec.Body)
			}
			if got := rec.Header().Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control = %q; want no-store", got)
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != tc.wantAuth {
				t.Errorf("WWW-Authenticate = %q; want %q", got, tc.wantAuth)
			}
			if tc.wantStatus == http.StatusOK {
				if got := rec.Body.String(); got != tc.wantBody+"\n" {
					t.Errorf("body = %s; want %s", got, tc.wantBody)
				}
				return
			}
			var body struct {
				Error       string `json:"error"`
				Description string `json:"error_description"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %s: %v", rec.Body, err)
			}
			if body.Error != tc.wantBody || body.Description == "" {
				t.Errorf("error, description = %q, %q; want %q and a description", body.Error, body.Description, tc.wantBody)
			}
		})
	}
}
