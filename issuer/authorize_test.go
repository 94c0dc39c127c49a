package issuer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/data/memory"
	"oauthd/keys/verify"
)

const authzTestIssuer = "https://auth.example.com"

var authzT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type authzFakeSigner struct{}

func (authzFakeSigner) Sign(jwt.Claims) (string, error) { return "", errors.New("not used") }

type authzFakeVerifier struct{}

func (authzFakeVerifier) Verify(context.Context, string) (*verify.Claims, error) {
	return nil, errors.New("not used")
}

// authzEnv is a Server over a memory store with a fixed, movable clock.
type authzEnv struct {
	s     *Server
	store *memory.Store
	now   time.Time
	logs  *bytes.Buffer
}

// authzVerifier returns a valid S256 challenge for verifier.
func authzChallenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

var authzTestChallenge = authzChallenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk-a-long-verifier")

// authzTestClients are the clients every authorize test starts with.
func authzTestClients() []data.Client {
	secret := []data.ClientSecret{{ID: "cs_1", Hash: data.Hash("oauthd_cs_x"), CreatedAt: authzT0}}
	return []data.Client{
		{ID: "conf", Name: "Calendar Sync", OwnerID: 1, Type: data.Confidential,
			RedirectURIs: []string{"https://app.example.com/callback", "https://app.example.com/cb?tenant=7", "http://127.0.0.1:8400/cb"},
			Scopes:       []string{"PROFILE_READ", "BOOKING_READ", "EVENT_TYPE_READ"},
			Status:       data.StatusApproved, Secrets: secret},
		{ID: "pub", Name: "Mobile App", OwnerID: 1, Type: data.Public,
			RedirectURIs: []string{"https://pub.example.com/cb"},
			Scopes:       []string{"PROFILE_READ"}, Status: data.StatusApproved},
		{ID: "pending", Name: "New App", OwnerID: 1, Type: data.Confidential,
			RedirectURIs: []string{"https://new.example.com/cb"},
			Scopes:       []string{"PROFILE_READ"}, Status: data.StatusPending, Secrets: secret},
		{ID: "rejected", Name: "Bad App", OwnerID: 1, Type: data.Confidential,
			RedirectURIs: []string{"https://bad.example.com/cb"}, Scopes: []string{"PROFILE_READ"},
			Status: data.StatusRejected, RejectReason: "spam", Secrets: secret},
		{ID: "legacy", Name: "Old Integration", OwnerID: 1, Type: data.Confidential,
			RedirectURIs: []string{"https://old.example.com/cb"}, Legacy: true,
			Status: data.StatusApproved, Secrets: secret},
		{ID: "migrated", Name: "Migrated Integration", OwnerID: 1, Type: data.Confidential,
			RedirectURIs: []string{"https://mig.example.com/cb"}, Scopes: []string{"PROFILE_READ"},
			Status: data.StatusApproved, Secrets: secret},
	}
}

func newAuthzEnv(t testing.TB) *authzEnv {
	t.Helper()
	env := &authzEnv{store: memory.New(), now: authzT0, logs: &bytes.Buffer{}}
	ctx := context.Background()
	for _, c := range authzTestClients() {
		c.CreatedAt, c.UpdatedAt = authzT0, authzT0
		if err := env.store.CreateClient(ctx, c); err != nil {
			t.Fatalf("CreateClient(%s): %v", c.ID, err)
		}
	}
	s, err := New(Config{
		Store:    env.store,
		Signer:   authzFakeSigner{},
		Verifier: authzFakeVerifier{},
		MeAuth:   func(next echo.HandlerFunc) echo.HandlerFunc { return next },
		Logger:   slog.New(slog.NewJSONHandler(env.logs, nil)),
		Now:      func() time.Time { return env.now },
		Issuer:   authzTestIssuer,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	env.s = s
	t.Cleanup(func() { env.store.Close() })
	return env
}

// authzQuery builds a query from name, value pairs; a name may repeat.
func authzQuery(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Add(kv[i], kv[i+1])
	}
	return q
}

// authzConf is a valid request of the confidential client, plus extra pairs.
func authzConf(extra ...string) url.Values {
	return authzQuery(append([]string{"client_id", "conf", "redirect_uri", "https://app.example.com/callback",
		"response_type", "code", "state", "xyz", "scope", "PROFILE_READ"}, extra...)...)
}

func TestParseAuthorizePageErrors(t *testing.T) {
	conf := "https://app.example.com/callback"
	tests := []struct {
		name      string
		q         url.Values
		wantTitle string
	}{
		{"missing client_id", authzQuery("redirect_uri", conf, "scope", "PROFILE_READ"), "Invalid authorization request"},
		{"empty client_id", authzQuery("client_id", "", "redirect_uri", conf, "scope", "PROFILE_READ"), "Invalid authorization request"},
		{"unknown client", authzQuery("client_id", "nope", "redirect_uri", conf, "scope", "PROFILE_READ"), "Unknown application"},
		{"client_id with NUL", authzQuery("client_id", "conf\x00", "redirect_uri", conf, "scope", "PROFILE_READ"), "Unknown application"},
		{"duplicate client_id", authzQuery("client_id", "conf", "client_id", "conf", "redirect_uri", conf, "scope", "PROFILE_READ"), "Invalid authorization request"},
		{"duplicate redirect_uri", authzQuery("client_id", "conf", "redirect_uri", conf, "redirect_uri", conf, "scope", "PROFILE_READ"), "Invalid authorization request"},
		{"missing redirect_uri", authzQuery("client_id", "conf", "scope", "PROFILE_READ"), "Invalid authorization request"},
		{"trailing slash", authzQuery("client_id", "conf", "redirect_uri", conf+"/", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"upper-case host", authzQuery("client_id", "conf", "redirect_uri", "https://APP.example.com/callback", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"upper-case path", authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/Callback", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"extra query", authzQuery("client_id", "conf", "redirect_uri", conf+"?next=/x", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"registered query altered", authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/cb?tenant=8", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"registered query dropped", authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/cb", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"prefix of registered", authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/call", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"registered as prefix", authzQuery("client_id", "conf", "redirect_uri", conf+"/../evil", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"host suffix trick", authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com.evil.com/callback", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"userinfo trick", authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com@evil.com/callback", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"fragment added", authzQuery("client_id", "conf", "redirect_uri", conf+"#x", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"percent-encoded path", authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/%63allback", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"localhost for 127.0.0.1", authzQuery("client_id", "conf", "redirect_uri", "http://localhost:8400/cb", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"other port", authzQuery("client_id", "conf", "redirect_uri", "http://127.0.0.1:8401/cb", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"http for https", authzQuery("client_id", "conf", "redirect_uri", "http://app.example.com/callback", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"javascript:", authzQuery("client_id", "conf", "redirect_uri", "javascript:alert(1)", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"data:", authzQuery("client_id", "conf", "redirect_uri", "data:text/html,<script>alert(1)</script>", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"other client's URI", authzQuery("client_id", "conf", "redirect_uri", "https://pub.example.com/cb", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"pending client", authzQuery("client_id", "pending", "redirect_uri", "https://new.example.com/cb", "scope", "PROFILE_READ"), "Application not approved yet"},
		{"rejected client", authzQuery("client_id", "rejected", "redirect_uri", "https://bad.example.com/cb", "scope", "PROFILE_READ"), "Application not available"},
		{"scoped client without scope", authzQuery("client_id", "conf", "redirect_uri", conf, "state", "s"), "Invalid authorization request"},
		{"scoped client with empty scope", authzQuery("client_id", "conf", "redirect_uri", conf, "scope", " ,+ "), "Invalid authorization request"},
		{"migrated legacy client without scope", authzQuery("client_id", "migrated", "redirect_uri", "https://mig.example.com/cb"), "Invalid authorization request"},
		// Errors before the redirect URI is trusted never redirect, even
		// when later parameters are bad too.
		{"bad redirect and bad response_type", authzQuery("client_id", "conf", "redirect_uri", "https://evil.com/", "response_type", "token", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
		{"bad redirect and control chars in state", authzQuery("client_id", "conf", "redirect_uri", "https://evil.com/", "state", "a\x00b", "scope", "PROFILE_READ"), "Unregistered redirect URI"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newAuthzEnv(t)
			req, err := env.s.ParseAuthorize(context.Background(), tc.q)
			pe, ok := errors.AsType[*PageError](err)
			if !ok {
				t.Fatalf("ParseAuthorize(%v) = %+v, %v; want *PageError", tc.q, req, err)
			}
			if pe.Title != tc.wantTitle {
				t.Errorf("Title = %q; want %q (message %q)", pe.Title, tc.wantTitle, pe.Message())
			}
			if pe.Message() == "" {
				t.Error("Message is empty")
			}
			for _, v := range tc.q["redirect_uri"] {
				if strings.Contains(pe.Message(), v) {
					t.Errorf("Message %q echoes the redirect_uri", pe.Message())
				}
			}
		})
	}
}

func TestParseAuthorizeRedirectErrors(t *testing.T) {
	conf := "https://app.example.com/callback"
	tests := []struct {
		name      string
		q         url.Values
		wantCode  string
		wantState string // "" means no state parameter in the redirect
		wantDesc  string // a substring of error_description
	}{
		{"duplicate scope", authzConf("scope", "NOPE"), "invalid_request", "xyz", "scope"},
		{"unknown scope alone", authzQuery("client_id", "conf", "redirect_uri", conf, "state", "xyz", "scope", "PROFILE_READ NOPE"), "invalid_scope", "xyz", "NOPE"},
		{"lower-case scope", authzQuery("client_id", "conf", "redirect_uri", conf, "state", "xyz", "scope", "profile_read"), "invalid_scope", "xyz", "profile_read"},
		{"scope outside the client's", authzQuery("client_id", "conf", "redirect_uri", conf, "state", "xyz", "scope", "PROFILE_READ,BOOKING_WRITE"), "invalid_scope", "xyz", "BOOKING_WRITE"},
		{"org scope not registered", authzQuery("client_id", "conf", "redirect_uri", conf, "state", "xyz", "scope", "ORG_BOOKING_READ"), "invalid_scope", "xyz", "ORG_BOOKING_READ"},
		{"duplicate differing response_type", authzConf("response_type", "token"), "invalid_request", "xyz", "response_type"},
		{"response_type token", authzQuery("client_id", "conf", "redirect_uri", conf, "state", "xyz", "scope", "PROFILE_READ", "response_type", "token"), "unsupported_response_type", "xyz", "code"},
		{"response_type empty", authzQuery("client_id", "conf", "redirect_uri", conf, "state", "xyz", "scope", "PROFILE_READ", "response_type", ""), "unsupported_response_type", "xyz", ""},
		{"response_type code id_token", authzQuery("client_id", "conf", "redirect_uri", conf, "state", "xyz", "scope", "PROFILE_READ", "response_type", "code id_token"), "unsupported_response_type", "xyz", ""},
		{"public client without challenge", authzQuery("client_id", "pub", "redirect_uri", "https://pub.example.com/cb", "state", "xyz", "scope", "PROFILE_READ"), "invalid_request", "xyz", "code_challenge"},
		{"public client with method only", authzQuery("client_id", "pub", "redirect_uri", "https://pub.example.com/cb", "state", "xyz", "scope", "PROFILE_READ", "code_challenge_method", "S256"), "invalid_request", "xyz", "code_challenge"},
		{"plain method", authzConf("code_challenge", authzTestChallenge, "code_challenge_method", "plain"), "invalid_request", "xyz", "plain is not supported; use S256"},
		{"lower-case s256", authzConf("code_challenge", authzTestChallenge, "code_challenge_method", "s256"), "invalid_request", "xyz", "S256"},
		{"empty method", authzConf("code_challenge", authzTestChallenge, "code_challenge_method", ""), "invalid_request", "xyz", "S256"},
		{"challenge too short", authzConf("code_challenge", authzTestChallenge[:42]), "invalid_request", "xyz", "code_challenge"},
		{"challenge too long", authzConf("code_challenge", authzTestChallenge+"A"), "invalid_request", "xyz", "code_challenge"},
		{"challenge with padding", authzConf("code_challenge", authzTestChallenge[:42]+"="), "invalid_request", "xyz", "code_challenge"},
		{"challenge std base64", authzConf("code_challenge", "+"+authzTestChallenge[1:]), "invalid_request", "xyz", "code_challenge"},
		{"empty challenge", authzConf("code_challenge", ""), "invalid_request", "xyz", "code_challenge"},
		{"public client with bad challenge", authzQuery("client_id", "pub", "redirect_uri", "https://pub.example.com/cb", "scope", "PROFILE_READ", "code_challenge", "short"), "invalid_request", "", "code_challenge"},
		{"duplicate state", authzConf("state", "abc"), "invalid_request", "", "state"},
		{"duplicate response_type", authzConf("response_type", "code"), "invalid_request", "xyz", "response_type"},
		{"duplicate code_challenge", authzConf("code_challenge", authzTestChallenge, "code_challenge", authzTestChallenge), "invalid_request", "xyz", "code_challenge"},
		{"state too long", authzQuery("client_id", "conf", "redirect_uri", conf, "scope", "PROFILE_READ", "state", strings.Repeat("s", 1025)), "invalid_request", "", "state"},
		{"state with NUL", authzQuery("client_id", "conf", "redirect_uri", conf, "scope", "PROFILE_READ", "state", "a\x00b"), "invalid_request", "", "state"},
		{"state with newline", authzQuery("client_id", "conf", "redirect_uri", conf, "scope", "PROFILE_READ", "state", "a\nb"), "invalid_request", "", "state"},
		{"state invalid UTF-8", authzQuery("client_id", "conf", "redirect_uri", conf, "scope", "PROFILE_READ", "state", "a\xffb"), "invalid_request", "", "state"},
		{"scope with control char", authzQuery("client_id", "conf", "redirect_uri", conf, "state", "xyz", "scope", "PROFILE_READ\x01"), "invalid_request", "xyz", "scope"},
		{"unknown parameter with NUL", authzConf("foo", "\x00"), "invalid_request", "xyz", "foo"},
		{"registered query preserved", authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/cb?tenant=7", "state", "xyz", "scope", "NOPE"), "invalid_scope", "xyz", "NOPE"},
		{"legacy unknown scope", authzQuery("client_id", "legacy", "redirect_uri", "https://old.example.com/cb", "state", "xyz", "scope", "EVERYTHING"), "invalid_scope", "xyz", "EVERYTHING"},
		{"legacy unknown among known", authzQuery("client_id", "legacy", "redirect_uri", "https://old.example.com/cb", "scope", "PROFILE_READ,ADMIN"), "invalid_scope", "", "ADMIN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newAuthzEnv(t)
			req, err := env.s.ParseAuthorize(context.Background(), tc.q)
			re, ok := errors.AsType[*RedirectError](err)
			if !ok {
				t.Fatalf("ParseAuthorize = %+v, %v; want *RedirectError", req, err)
			}
			if re.Err.Code != tc.wantCode {
				t.Errorf("Code = %q; want %q (URL %s)", re.Err.Code, tc.wantCode, re.URL)
			}
			registered := tc.q.Get("redirect_uri")
			if !strings.HasPrefix(re.URL, registered) {
				t.Fatalf("URL %q does not start with the registered %q", re.URL, registered)
			}
			u, err := url.Parse(re.URL)
			if err != nil {
				t.Fatalf("URL %q: %v", re.URL, err)
			}
			got := u.Query()
			if got.Get("error") != tc.wantCode {
				t.Errorf("error = %q; want %q", got.Get("error"), tc.wantCode)
			}
			desc := got.Get("error_description")
			if !strings.Contains(desc, tc.wantDesc) {
				t.Errorf("error_description = %q; want it to contain %q", desc, tc.wantDesc)
			}
			for _, c := range desc {
				if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
					t.Errorf("error_description %q has %q, outside RFC 6749's charset", desc, c)
				}
			}
			if st, has := got["state"]; tc.wantState == "" && has {
				t.Errorf("state = %q; want none", st)
			} else if tc.wantState != "" && got.Get("state") != tc.wantState {
				t.Errorf("state = %q; want %q", got.Get("state"), tc.wantState)
			}
			if got.Get("iss") != authzTestIssuer {
				t.Errorf("iss = %q; want %q", got.Get("iss"), authzTestIssuer)
			}
			if reg, _ := url.Parse(registered); reg.RawQuery != "" {
				for k, v := range reg.Query() {
					if !slices.Equal(got[k], v) {
						t.Errorf("registered query %s=%v became %v", k, v, got[k])
					}
				}
			}
		})
	}
}

func TestParseAuthorizeOK(t *testing.T) {
	tests := []struct {
		name             string
		q                url.Values
		wantScopes       []string
		wantUnrestricted bool
		wantChallenge    string
	}{
		{"single scope", authzConf(), []string{"PROFILE_READ"}, false, ""},
		{"response_type absent", authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/callback", "scope", "PROFILE_READ"), []string{"PROFILE_READ"}, false, ""},
		{"space-separated", authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/callback", "scope", "PROFILE_READ BOOKING_READ"), []string{"PROFILE_READ", "BOOKING_READ"}, false, ""},
		{"plus-separated", authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/callback", "scope", "PROFILE_READ+BOOKING_READ"), []string{"PROFILE_READ", "BOOKING_READ"}, false, ""},
		{"comma-separated", authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/callback", "scope", "PROFILE_READ,BOOKING_READ,EVENT_TYPE_READ"), []string{"PROFILE_READ", "BOOKING_READ", "EVENT_TYPE_READ"}, false, ""},
		{"mixed separators, duplicates folded", authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/callback", "scope", " BOOKING_READ,+PROFILE_READ BOOKING_READ,,PROFILE_READ "), []string{"BOOKING_READ", "PROFILE_READ"}, false, ""},
		{"confidential with challenge", authzConf("code_challenge", authzTestChallenge, "code_challenge_method", "S256"), []string{"PROFILE_READ"}, false, authzTestChallenge},
		{"method absent means S256", authzConf("code_challenge", authzTestChallenge), []string{"PROFILE_READ"}, false, authzTestChallenge},
		{"public with challenge", authzQuery("client_id", "pub", "redirect_uri", "https://pub.example.com/cb", "scope", "PROFILE_READ", "code_challenge", authzTestChallenge), []string{"PROFILE_READ"}, false, authzTestChallenge},
		{"registered query", authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/cb?tenant=7", "scope", "PROFILE_READ"), []string{"PROFILE_READ"}, false, ""},
		{"loopback", authzQuery("client_id", "conf", "redirect_uri", "http://127.0.0.1:8400/cb", "scope", "PROFILE_READ"), []string{"PROFILE_READ"}, false, ""},
		{"unknown extra parameter ignored", authzConf("prompt", "consent"), []string{"PROFILE_READ"}, false, ""},
		{"legacy without scope", authzQuery("client_id", "legacy", "redirect_uri", "https://old.example.com/cb"), []string{}, true, ""},
		{"legacy with known scopes", authzQuery("client_id", "legacy", "redirect_uri", "https://old.example.com/cb", "scope", "PROFILE_READ,ORG_BOOKING_WRITE"), []string{"PROFILE_READ", "ORG_BOOKING_WRITE"}, true, ""},
		{"migrated with scope", authzQuery("client_id", "migrated", "redirect_uri", "https://mig.example.com/cb", "scope", "PROFILE_READ"), []string{"PROFILE_READ"}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newAuthzEnv(t)
			req, err := env.s.ParseAuthorize(context.Background(), tc.q)
			if err != nil {
				t.Fatalf("ParseAuthorize: %v", err)
			}
			if req.Client.ID != tc.q.Get("client_id") || req.RedirectURI != tc.q.Get("redirect_uri") {
				t.Errorf("Client, RedirectURI = %q, %q; want %q, %q", req.Client.ID, req.RedirectURI, tc.q.Get("client_id"), tc.q.Get("redirect_uri"))
			}
			if !slices.Equal(req.Scopes, tc.wantScopes) {
				t.Errorf("Scopes = %q; want %q", req.Scopes, tc.wantScopes)
			}
			if req.Unrestricted != tc.wantUnrestricted {
				t.Errorf("Unrestricted = %v; want %v", req.Unrestricted, tc.wantUnrestricted)
			}
			if req.CodeChallenge != tc.wantChallenge {
				t.Errorf("CodeChallenge = %q; want %q", req.CodeChallenge, tc.wantChallenge)
			}
			if req.State != tc.q.Get("state") {
				t.Errorf("State = %q; want %q", req.State, tc.q.Get("state"))
			}
			if fmt.Sprint(req.Query) != fmt.Sprint(tc.q) {
				t.Errorf("Query = %v; want %v", req.Query, tc.q)
			}
		})
	}
}

func TestParseAuthorizeStateAtLimit(t *testing.T) {
	env := newAuthzEnv(t)
	state := strings.Repeat("é", 512) // 1024 bytes
	req, err := env.s.ParseAuthorize(context.Background(), authzQuery("client_id", "conf",
		"redirect_uri", "https://app.example.com/callback", "scope", "PROFILE_READ", "state", state))
	if err != nil {
		t.Fatalf("ParseAuthorize with a 1024-byte state: %v", err)
	}
	if req.State != state {
		t.Errorf("State changed")
	}
}

func TestLegacyUsage(t *testing.T) {
	ctx := context.Background()
	env := newAuthzEnv(t)
	legacy := func(extra ...string) url.Values {
		return authzQuery(append([]string{"client_id", "legacy", "redirect_uri", "https://old.example.com/cb"}, extra...)...)
	}
	parse := func(q url.Values) {
		t.Helper()
		if _, err := env.s.ParseAuthorize(ctx, q); err != nil {
			t.Fatalf("ParseAuthorize(%v): %v", q, err)
		}
	}
	usage := func() []data.UsageDay {
		t.Helper()
		c, err := env.store.GetClient(ctx, "legacy")
		if err != nil {
			t.Fatal(err)
		}
		return c.Usage
	}

	parse(legacy())
	parse(legacy("scope", "PROFILE_READ"))
	parse(legacy())
	// A request that fails after the client is trusted still counts (it
	// tells whether the authorization URL carries scope); one that fails
	// before (unregistered redirect) does not.
	if _, err := env.s.ParseAuthorize(ctx, legacy("scope", "PROFILE_READ", "response_type", "token")); err == nil {
		t.Fatal("response_type=token accepted")
	}
	if _, err := env.s.ParseAuthorize(ctx, authzQuery("client_id", "legacy", "redirect_uri", "https://evil.example.com/cb")); err == nil {
		t.Fatal("unregistered redirect accepted")
	}
	// Approve and Deny validate again without counting.
	if _, err := env.s.Approve(ctx, legacy(), 1); err != nil {
		t.Fatalf("Approve: %v", err)
	}
	if _, err := env.s.Deny(ctx, legacy(), 1); err != nil {
		t.Fatalf("Deny: %v", err)
	}
	want := []data.UsageDay{{Day: "2026-03-01", WithScope: 2, WithoutScope: 2}}
	if got := usage(); !slices.Equal(got, want) {
		t.Fatalf("Usage = %+v; want %+v", got, want)
	}

	env.now = authzT0.Add(24 * time.Hour)
	parse(legacy("scope", "PROFILE_READ"))
	want = append(want, data.UsageDay{Day: "2026-03-02", WithScope: 1})
	if got := usage(); !slices.Equal(got, want) {
		t.Fatalf("Usage = %+v; want %+v", got, want)
	}

	// Scoped clients are not counted.
	parse(authzConf())
	if c, _ := env.store.GetClient(ctx, "conf"); len(c.Usage) != 0 {
		t.Errorf("scoped client Usage = %+v; want none", c.Usage)
	}
}

func TestAuthzAddUsage(t *testing.T) {
	var usage []data.UsageDay
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range data.MaxUsageDays + 5 {
		usage = authzAddUsage(usage, start.AddDate(0, 0, i).Format(time.DateOnly), i%2 == 0)
	}
	if len(usage) != data.MaxUsageDays {
		t.Fatalf("len(usage) = %d; want %d", len(usage), data.MaxUsageDays)
	}
	if first, want := usage[0].Day, start.AddDate(0, 0, 5).Format(time.DateOnly); first != want {
		t.Errorf("oldest day = %s; want %s", first, want)
	}
	if last, want := usage[len(usage)-1].Day, start.AddDate(0, 0, data.MaxUsageDays+4).Format(time.DateOnly); last != want {
		t.Errorf("newest day = %s; want %s", last, want)
	}
	// A clock that went back a day counts on that day, keeping the order.
	before := slices.Clone(usage)
	day := usage[len(usage)-2].Day
	usage = authzAddUsage(usage, day, true)
	if usage[len(usage)-2].WithScope != before[len(before)-2].WithScope+1 {
		t.Errorf("earlier day not incremented: %+v", usage[len(usage)-2])
	}
	if before[len(before)-2] == usage[len(usage)-2] {
		t.Error("authzAddUsage modified its input")
	}
	if !slices.IsSortedFunc(usage, func(a, b data.UsageDay) int { return strings.Compare(a.Day, b.Day) }) {
		t.Error("usage not sorted")
	}
}

func TestApprove(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name             string
		q                url.Values
		wantPrefix       string
		wantScopes       []string
		wantUnrestricted bool
		wantChallenge    string
		wantState        string
	}{
		{"confidential", authzConf(), "https://app.example.com/callback?", []string{"PROFILE_READ"}, false, "", "xyz"},
		{"registered query kept", authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/cb?tenant=7", "scope", "PROFILE_READ BOOKING_READ", "state", "s 1&2"),
			"https://app.example.com/cb?tenant=7&", []string{"PROFILE_READ", "BOOKING_READ"}, false, "", "s 1&2"},
		{"public with PKCE, no state", authzQuery("client_id", "pub", "redirect_uri", "https://pub.example.com/cb", "scope", "PROFILE_READ", "code_challenge", authzTestChallenge),
			"https://pub.example.com/cb?", []string{"PROFILE_READ"}, false, authzTestChallenge, ""},
		{"legacy", authzQuery("client_id", "legacy", "redirect_uri", "https://old.example.com/cb", "state", "l"),
			"https://old.example.com/cb?", []string{}, true, "", "l"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newAuthzEnv(t)
			redirect, err := env.s.Approve(ctx, tc.q, 42)
			if err != nil {
				t.Fatalf("Approve: %v", err)
			}
			if !strings.HasPrefix(redirect, tc.wantPrefix) {
				t.Fatalf("redirect %q; want prefix %q", redirect, tc.wantPrefix)
			}
			u, err := url.Parse(redirect)
			if err != nil {
				t.Fatal(err)
			}
			got := u.Query()
			code := got.Get("code")
			if !strings.HasPrefix(code, data.PrefixAuthCode) || len(code) != len(data.PrefixAuthCode)+7+43 {
				t.Fatalf("code = %q; want %s + 50 characters", code, data.PrefixAuthCode)
			}
			if st, has := got["state"]; tc.wantState == "" && has {
				t.Errorf("state = %q; want none", st)
			} else if got.Get("state") != tc.wantState {
				t.Errorf("state = %q; want %q", got.Get("state"), tc.wantState)
			}
			if got.Get("iss") != authzTestIssuer {
				t.Errorf("iss = %q; want %q", got.Get("iss"), authzTestIssuer)
			}
			if got.Has("error") {
				t.Errorf("redirect carries error %q", got.Get("error"))
			}

			// The stored code: read it through ExchangeAuthCode and abort.
			var ac data.AuthCode
			errStop := errors.New("stop")
			_, _, err = env.store.ExchangeAuthCode(ctx, data.AuthCodeKey(code), func(c data.AuthCode) (data.Family, error) {
				ac = c
				return data.Family{}, errStop
			})
			if !errors.Is(err, errStop) {
				t.Fatalf("ExchangeAuthCode: %v; want the code stored", err)
			}
			want := data.AuthCode{
				Hash: data.AuthCodeKey(code), ClientID: tc.q.Get("client_id"), UserID: 42,
				RedirectURI: tc.q.Get("redirect_uri"), Scopes: tc.wantScopes, Unrestricted: tc.wantUnrestricted,
				CodeChallenge: tc.wantChallenge, CreatedAt: authzT0, ExpiresAt: authzT0.Add(time.Minute),
			}
			if !bytes.Equal(ac.Hash, want.Hash) || ac.ClientID != want.ClientID || ac.UserID != want.UserID ||
				ac.RedirectURI != want.RedirectURI || !slices.Equal(ac.Scopes, want.Scopes) ||
				ac.Unrestricted != want.Unrestricted || ac.CodeChallenge != want.CodeChallenge ||
				!ac.CreatedAt.Equal(want.CreatedAt) || !ac.ExpiresAt.Equal(want.ExpiresAt) || ac.Used {
				t.Errorf("stored code = %+v\nwant %+v", ac, want)
			}

			g, err := env.store.GetGrant(ctx, 42, tc.q.Get("client_id"))
			if err != nil {
				t.Fatalf("GetGrant: %v", err)
			}
			if !slices.Equal(g.Scopes, tc.wantScopes) && (len(g.Scopes) != 0 || len(tc.wantScopes) != 0) {
				t.Errorf("grant scopes = %q; want %q", g.Scopes, tc.wantScopes)
			}

			logs := env.logs.String()
			if !strings.Contains(logs, `"event":"consent_granted"`) || !strings.Contains(logs, `"user_id":42`) {
				t.Errorf("no consent_granted audit record in %s", logs)
			}
			if strings.Contains(logs, code) || strings.Contains(logs, code[len(data.PrefixAuthCode):]) {
				t.Errorf("the code was logged: %s", logs)
			}
		})
	}
}

func TestApproveMergesGrant(t *testing.T) {
	ctx := context.Background()
	env := newAuthzEnv(t)
	q := func(sc string) url.Values {
		return authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/callback", "scope", sc)
	}
	if _, err := env.s.Approve(ctx, q("PROFILE_READ,BOOKING_READ"), 7); err != nil {
		t.Fatal(err)
	}
	env.now = authzT0.Add(time.Hour)
	if _, err := env.s.Approve(ctx, q("EVENT_TYPE_READ PROFILE_READ"), 7); err != nil {
		t.Fatal(err)
	}
	g, err := env.store.GetGrant(ctx, 7, "conf")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"PROFILE_READ", "BOOKING_READ", "EVENT_TYPE_READ"}; !slices.Equal(g.Scopes, want) {
		t.Errorf("grant scopes = %q; want %q", g.Scopes, want)
	}
	if !g.CreatedAt.Equal(authzT0) || !g.UpdatedAt.Equal(authzT0.Add(time.Hour)) {
		t.Errorf("grant CreatedAt, UpdatedAt = %v, %v; want %v, %v", g.CreatedAt, g.UpdatedAt, authzT0, authzT0.Add(time.Hour))
	}
}

func TestApproveDenyRevalidate(t *testing.T) {
	ctx := context.Background()
	env := newAuthzEnv(t)
	// The client was rejected between the consent page and the decision.
	if _, err := env.store.UpdateClient(ctx, "conf", func(c data.Client) (data.Client, error) {
		c.Status, c.RejectReason = data.StatusRejected, "abuse"
		return c, nil
	}); err != nil {
		t.Fatal(err)
	}
	for name, decide := range map[string]func(context.Context, url.Values, int64) (string, error){
		"Approve": env.s.Approve, "Deny": env.s.Deny,
	} {
		redirect, err := decide(ctx, authzConf(), 1)
		if _, ok := errors.AsType[*PageError](err); !ok {
			t.Errorf("%s for a rejected client = %q, %v; want *PageError", name, redirect, err)
		}
	}
	redirect, err := env.s.Approve(ctx, authzQuery("client_id", "pub", "redirect_uri", "https://pub.example.com/cb", "scope", "PROFILE_READ"), 1)
	if re, ok := errors.AsType[*RedirectError](err); !ok || re.Err.Code != "invalid_request" {
		t.Errorf("Approve of a public client without PKCE = %q, %v; want invalid_request", redirect, err)
	}
	if _, err := env.store.GetGrant(ctx, 1, "pub"); !errors.Is(err, data.ErrNotFound) {
		t.Errorf("a grant was recorded for a refused request: %v", err)
	}
}

func TestDeny(t *testing.T) {
	ctx := context.Background()
	env := newAuthzEnv(t)
	redirect, err := env.s.Deny(ctx, authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/cb?tenant=7",
		"scope", "PROFILE_READ", "state", "st-1"), 3)
	if err != nil {
		t.Fatalf("Deny: %v", err)
	}
	if !strings.HasPrefix(redirect, "https://app.example.com/cb?tenant=7&") {
		t.Fatalf("redirect = %q; want the registered URI with its query", redirect)
	}
	u, _ := url.Parse(redirect)
	got := u.Query()
	if got.Get("error") != "access_denied" || got.Get("state") != "st-1" || got.Get("iss") != authzTestIssuer ||
		got.Get("error_description") == "" || got.Has("code") || got.Get("tenant") != "7" {
		t.Errorf("Deny redirect query = %v", got)
	}
	if _, err := env.store.GetGrant(ctx, 3, "conf"); !errors.Is(err, data.ErrNotFound) {
		t.Errorf("Deny recorded a grant: %v", err)
	}
	if logs := env.logs.String(); !strings.Contains(logs, `"event":"consent_denied"`) {
		t.Errorf("no consent_denied audit record in %s", logs)
	}
}

func BenchmarkParseAuthorize(b *testing.B) {
	env := newAuthzEnv(b)
	ctx := context.Background()
	q := authzQuery("client_id", "conf", "redirect_uri", "https://app.example.com/callback", "response_type", "code",
		"state", "xyz", "scope", "PROFILE_READ,BOOKING_READ", "code_challenge", authzTestChallenge)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := env.s.ParseAuthorize(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkApprove(b *testing.B) {
	env := newAuthzEnv(b)
	ctx := context.Background()
	q := authzConf("code_challenge", authzTestChallenge)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := env.s.Approve(ctx, q, 1); err != nil {
			b.Fatal(err)
		}
	}
}
