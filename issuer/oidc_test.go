package issuer

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"oauthd/data"
	"oauthd/keys/guard"
	"oauthd/keys/verify"
	"oauthd/keys/verify/dpoptest"
)

// SignWith makes tkSigner an IDTokenSigner: the claims build returns for
// ES256, signed with the header typ given.
func (s *tkSigner) SignWith(typ string, build func(alg string) (jwt.Claims, error)) (string, error) {
	claims, err := build(verify.ES256)
	if err != nil {
		return "", err
	}
	return s.signed(claims, typ)
}

// oidcEnv is a tkEnv with OpenID Connect clients, a user, and the real
// guard (over the grant check) in front of /v2/me and userinfo.
type oidcEnv struct {
	*tkEnv
	user data.User
}

const (
	oidcRP       = "rp"  // confidential, openid profile email PROFILE_READ
	oidcRP2      = "rp2" // confidential, another relying party
	oidcSPA      = "spa" // public, openid
	oidcLogout   = "https://rp.example.com/logged-out"
	oidcLogout2  = "https://rp2.example.com/bye"
	oidcRPSecret = "oauthd_cs_rpsecretrpsecretrpsecretrpsecretrpsecre"
)

func newOIDCEnv(t *testing.T) *oidcEnv {
	t.Helper()
	var gv *GrantVerifier
	env := newTkEnv(t, func(c *Config) {
		gv = NewGrantVerifier(c.Verifier)
		g := guard.New(guard.Config{Verifier: gv, Table: UserinfoTable(), PublicURL: tkIssuer})
		c.UserinfoAuth = g.Echo()
		c.MeAuth = guard.New(guard.Config{Verifier: gv, Table: guard.DefaultTable()}).Echo()
	})
	gv.Bind(env.s)
	ctx := context.Background()
	u, err := env.store.CreateUser(ctx, data.User{Email: "ada@example.com", Username: "ada", Name: "Ada Lovelace",
		TimeZone: "Europe/London", CreatedAt: tkT0.Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	sec := []data.ClientSecret{{ID: "cs_rp", Hash: data.Hash(oidcRPSecret), CreatedAt: tkT0}}
	for _, c := range []data.Client{
		{ID: oidcRP, Type: data.Confidential, Scopes: []string{"openid", "profile", "email", "PROFILE_READ"}, Secrets: sec,
			PostLogoutRedirectURIs: []string{oidcLogout, "https://rp.example.com/bye?tenant=1"}},
		{ID: oidcRP2, Type: data.Confidential, Scopes: []string{"openid", "profile"}, Secrets: sec,
			PostLogoutRedirectURIs: []string{oidcLogout2}},
		{ID: oidcSPA, Type: data.Public, Scopes: []string{"openid", "profile"}},
	} {
		c.Name, c.UnclaimedOwner, c.RedirectURIs, c.Status, c.CreatedAt, c.UpdatedAt = "RP "+c.ID, "dev@example.com", []string{tkRedirect}, data.StatusApproved, tkT0, tkT0
		if err := env.store.CreateClient(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	return &oidcEnv{tkEnv: env, user: u}
}

// authz is an authorization request of client for scopes, plus extra.
func oidcAuthz(client, scopes string, extra ...string) url.Values {
	q := url.Values{"client_id": {client}, "redirect_uri": {tkRedirect}, "response_type": {"code"},
		"scope": {scopes}, "state": {"st"}, "code_challenge": {tkChallenge(tkVerifier)}}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	return q
}

// approve approves q for the env's user, authenticated at authTime, and
// returns the code.
func (env *oidcEnv) approve(t *testing.T, q url.Values, authTime time.Time) string {
	t.Helper()
	to, err := env.s.ApproveLogin(context.Background(), q, Login{UserID: env.user.ID, AuthTime: authTime})
	if err != nil {
		t.Fatalf("ApproveLogin: %v", err)
	}
	u, _ := url.Parse(to)
	code := u.Query().Get("code")
	if code == "" {
		t.Fatalf("no code in %s", to)
	}
	return code
}

type oidcTokens struct {
	tkTokens
	IDToken string `json:"id_token"`
}

// exchange trades code of client for tokens.
func (env *oidcEnv) exchange(t *testing.T, client, code string) oidcTokens {
	t.Helper()
	kv := []string{"grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect, "client_id", client, "code_verifier", tkVerifier}
	if client != oidcSPA {
		kv = append(kv, "client_secret", oidcRPSecret)
	}
	rec := env.do(tkReq{body: tkForm(kv...)})
	if rec.Code != http.StatusOK {
		t.Fatalf("exchange = %d %s", rec.Code, rec.Body)
	}
	var tok oidcTokens
	if err := json.Unmarshal(rec.Body.Bytes(), &tok); err != nil {
		t.Fatal(err)
	}
	return tok
}

// idClaimsOf verifies an ID token's signature and header and returns its
// claims.
func (env *oidcEnv) idClaimsOf(t *testing.T, tok string) map[string]any {
	t.Helper()
	claims := jwt.MapClaims{}
	parsed, err := jwt.ParseWithClaims(tok, claims, func(tk *jwt.Token) (any, error) {
		return &env.signer.key.PublicKey, nil
	}, jwt.WithValidMethods([]string{"ES256"}), jwt.WithTimeFunc(env.clock))
	if err != nil {
		t.Fatalf("ID token does not verify: %v", err)
	}
	if parsed.Header["typ"] != "JWT" || parsed.Header["kid"] != env.signer.kid {
		t.Fatalf("ID token header %v; want typ JWT and the kid", parsed.Header)
	}
	return claims
}

// TestIDTokenClaimsByScope: one row per scope rule (Core §5.4): which
// claims an ID token and userinfo carry, and that a grant without openid
// has no ID token at all.
func TestIDTokenClaimsByScope(t *testing.T) {
	tests := []struct {
		scopes  string
		idToken bool
		present []string
		absent  []string
	}{
		{"PROFILE_READ", false, nil, nil},
		{"openid", true, nil, []string{"name", "preferred_username", "zoneinfo", "updated_at", "email", "email_verified"}},
		{"openid profile", true, []string{"name", "preferred_username", "zoneinfo", "updated_at"}, []string{"email", "email_verified"}},
		{"openid email", true, []string{"email", "email_verified"}, []string{"name", "preferred_username", "zoneinfo", "updated_at"}},
		{"openid profile email PROFILE_READ", true, []string{"name", "preferred_username", "zoneinfo", "updated_at", "email", "email_verified"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.scopes, func(t *testing.T) {
			env := newOIDCEnv(t)
			authAt := env.clock().Add(-5 * time.Minute)
			tok := env.exchange(t, oidcRP, env.approve(t, oidcAuthz(oidcRP, tc.scopes, "nonce", "n-"+tc.scopes), authAt))
			if !tc.idToken {
				if tok.IDToken != "" {
					t.Fatalf("id_token for scopes %q; want none", tc.scopes)
				}
				return
			}
			c := env.idClaimsOf(t, tok.IDToken)
			sub := strconv.FormatInt(env.user.ID, 10)
			want := map[string]any{"iss": tkIssuer, "sub": sub, "aud": oidcRP, "azp": oidcRP, "nonce": "n-" + tc.scopes,
				"iat": float64(env.clock().Unix()), "exp": float64(env.clock().Add(30 * time.Minute).Unix()),
				"auth_time": float64(authAt.Unix())}
			for k, v := range want {
				if c[k] != v {
					t.Errorf("%s = %v; want %v", k, c[k], v)
				}
			}
			sum := sha256.Sum256([]byte(tok.AccessToken))
			if c["at_hash"] != base64.RawURLEncoding.EncodeToString(sum[:16]) {
				t.Errorf("at_hash = %v; want the left half of SHA-256 of the access token", c["at_hash"])
			}
			for _, k := range tc.present {
				if _, ok := c[k]; !ok {
					t.Errorf("claim %s missing", k)
				}
			}
			for _, k := range tc.absent {
				if _, ok := c[k]; ok {
					t.Errorf("claim %s present; the scopes %q do not release it", k, tc.scopes)
				}
			}
			if slices.Contains(tc.present, "email") && (c["email"] != "ada@example.com" || c["email_verified"] != false) {
				t.Errorf("email %v, email_verified %v; want the store's email, not verified", c["email"], c["email_verified"])
			}
			if slices.Contains(tc.present, "name") && (c["name"] != "Ada Lovelace" || c["preferred_username"] != "ada" ||
				c["zoneinfo"] != "Europe/London" || c["updated_at"] != float64(env.user.CreatedAt.Unix())) {
				t.Errorf("profile claims %v", c)
			}
			// userinfo: the same claims, the same sub.
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				rec := env.do(tkReq{path: userinfoPath, method: method, ct: "none", header: [][2]string{{"Authorization", "Bearer " + tok.AccessToken}}})
				if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-store" {
					t.Fatalf("%s userinfo = %d %s", method, rec.Code, rec.Body)
				}
				var ui map[string]any
				json.Unmarshal(rec.Body.Bytes(), &ui)
				if ui["sub"] != sub {
					t.Errorf("userinfo sub = %v; want %s", ui["sub"], sub)
				}
				for _, k := range append(slices.Clone(tc.present), tc.absent...) {
					if _, inID := c[k]; ui[k] != c[k] && !(inID == false && ui[k] == nil) {
						t.Errorf("userinfo %s = %v; ID token %v", k, ui[k], c[k])
					}
				}
			}
		})
	}
}

// TestIDTokenRefresh: a refresh returns a new ID token with the same sub
// and auth_time, a new iat, no nonce (Core §12.2); a refresh narrowed to
// scopes without openid returns none.
func TestIDTokenRefresh(t *testing.T) {
	env := newOIDCEnv(t)
	authAt := env.clock().Add(-time.Hour)
	tok := env.exchange(t, oidcRP, env.approve(t, oidcAuthz(oidcRP, "openid profile PROFILE_READ", "nonce", "abc"), authAt))
	first := env.idClaimsOf(t, tok.IDToken)
	env.advance(10 * time.Minute)
	rec := env.do(env.refreshReq(oidcRP, oidcRPSecret, tok.RefreshToken))
	var next oidcTokens
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &next) != nil || next.IDToken == "" {
		t.Fatalf("refresh = %d %s; want a new id_token", rec.Code, rec.Body)
	}
	c := env.idClaimsOf(t, next.IDToken)
	if c["sub"] != first["sub"] || c["auth_time"] != first["auth_time"] || c["aud"] != oidcRP || c["azp"] != oidcRP {
		t.Errorf("refreshed ID token %v; want sub, auth_time, aud, azp of %v", c, first)
	}
	if c["iat"] != float64(env.clock().Unix()) {
		t.Errorf("iat = %v; want the refresh time", c["iat"])
	}
	if _, ok := c["nonce"]; ok {
		t.Error("refreshed ID token carries a nonce (Core §12.2: SHOULD NOT)")
	}
	sum := sha256.Sum256([]byte(next.AccessToken))
	if c["at_hash"] != base64.RawURLEncoding.EncodeToString(sum[:16]) {
		t.Error("at_hash is not the new access token's")
	}
	rec = env.do(env.refreshReq(oidcRP, oidcRPSecret, next.RefreshToken, "scope", "PROFILE_READ"))
	var narrowed oidcTokens
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &narrowed) != nil || narrowed.IDToken != "" {
		t.Fatalf("narrowed refresh = %d %s; want no id_token", rec.Code, rec.Body)
	}
}

// TestAuthTime: auth_time is the login's, whichever login it was: a
// re-login moves it, a handover's assertion time (passed by the consent
// pages as the session's AuthTime) is kept as is, and a refresh never
// moves it.
func TestAuthTime(t *testing.T) {
	env := newOIDCEnv(t)
	for _, tc := range []struct {
		name string
		at   time.Time
	}{
		{"first login", env.clock().Add(-2 * time.Hour)},
		{"re-login", env.clock().Add(-time.Minute)},
		{"handover assertion", time.Date(2026, 2, 28, 23, 59, 58, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := env.exchange(t, oidcRP, env.approve(t, oidcAuthz(oidcRP, "openid"), tc.at))
			if got := env.idClaimsOf(t, tok.IDToken)["auth_time"]; got != float64(tc.at.Unix()) {
				t.Fatalf("auth_time = %v; want %d", got, tc.at.Unix())
			}
		})
	}
}

// TestTokenHash: at_hash per alg (Core §3.1.3.6).
func TestTokenHash(t *testing.T) {
	const at = "jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y"
	s256 := sha256.Sum256([]byte(at))
	s512 := sha512.Sum512([]byte(at))
	tests := []struct {
		alg, want string
		err       bool
	}{
		{"ES256", base64.RawURLEncoding.EncodeToString(s256[:16]), false},
		{"RS256", base64.RawURLEncoding.EncodeToString(s256[:16]), false},
		{"EdDSA", base64.RawURLEncoding.EncodeToString(s512[:32]), false},
		{"HS256", "", true},
		{"none", "", true},
	}
	for _, tc := range tests {
		got, err := tokenHash(tc.alg, at)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("tokenHash(%s) = %q, %v; want %q (error %v)", tc.alg, got, err, tc.want, tc.err)
		}
	}
	// The example of OpenID Connect Core A.3 (RS256).
	if got, _ := tokenHash("RS256", "jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y"); got != "77QmUPtjPfzWtF2AnpK9RQ" {
		t.Errorf("Core A.3 at_hash = %s; want 77QmUPtjPfzWtF2AnpK9RQ", got)
	}
}

// TestClaimsFor: the scope → claims rule as a pure function.
func TestClaimsFor(t *testing.T) {
	u := data.User{ID: 3, Email: "e@example.com", Username: "e", Name: "E", TimeZone: "UTC", CreatedAt: tkT0}
	updated := u
	updated.ProfileUpdatedAt = tkT0.Add(time.Hour)
	noEmail := u
	noEmail.Email = ""
	f := false
	tests := []struct {
		name   string
		u      data.User
		scopes []string
		want   userClaims
	}{
		{"openid only", u, []string{"openid"}, userClaims{}},
		{"API scopes release nothing", u, []string{"openid", "PROFILE_READ"}, userClaims{}},
		{"profile", u, []string{"openid", "profile"}, userClaims{Name: "E", PreferredUsername: "e", Zoneinfo: "UTC", UpdatedAt: tkT0.Unix()}},
		{"profile updated", updated, []string{"profile"}, userClaims{Name: "E", PreferredUsername: "e", Zoneinfo: "UTC", UpdatedAt: tkT0.Add(time.Hour).Unix()}},
		{"email", u, []string{"openid", "email"}, userClaims{Email: "e@example.com", EmailVerified: &f}},
		{"email unknown", noEmail, []string{"openid", "email"}, userClaims{}},
	}
	for _, tc := range tests {
		got := claimsFor(tc.u, tc.scopes)
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(tc.want)
		if string(gb) != string(wb) {
			t.Errorf("%s: claimsFor = %s; want %s", tc.name, gb, wb)
		}
	}
}

// TestOIDCAuthorizeParams: the parameters of Core §3.1.2.1 as the
// authorization endpoint validates them.
func TestOIDCAuthorizeParams(t *testing.T) {
	env := newOIDCEnv(t)
	ctx := context.Background()
	tests := []struct {
		name      string
		q         url.Values
		wantError string // "" = valid
	}{
		{"openid with nonce", oidcAuthz(oidcRP, "openid", "nonce", "n"), ""},
		{"openid without nonce, confidential", oidcAuthz(oidcRP, "openid"), ""},
		{"openid without nonce, public", oidcAuthz(oidcSPA, "openid"), "invalid_request"},
		{"openid with nonce, public", oidcAuthz(oidcSPA, "openid", "nonce", "n"), ""},
		{"no openid, public, no nonce", oidcAuthz(oidcSPA, "profile"), ""},
		{"nonce too long", oidcAuthz(oidcRP, "openid", "nonce", strings.Repeat("n", 513)), "invalid_request"},
		{"prompt none", oidcAuthz(oidcRP, "openid", "prompt", "none"), ""},
		{"prompt login consent", oidcAuthz(oidcRP, "openid", "prompt", "login consent"), ""},
		{"prompt none and login", oidcAuthz(oidcRP, "openid", "prompt", "none login"), "invalid_request"},
		{"prompt unknown", oidcAuthz(oidcRP, "openid", "prompt", "create"), "invalid_request"},
		{"prompt twice", oidcAuthz(oidcRP, "openid", "prompt", "login login"), "invalid_request"},
		{"max_age 0", oidcAuthz(oidcRP, "openid", "max_age", "0"), ""},
		{"max_age 3600", oidcAuthz(oidcRP, "openid", "max_age", "3600"), ""},
		{"max_age negative", oidcAuthz(oidcRP, "openid", "max_age", "-1"), "invalid_request"},
		{"max_age not a number", oidcAuthz(oidcRP, "openid", "max_age", "1h"), "invalid_request"},
		{"max_age with sign", oidcAuthz(oidcRP, "openid", "max_age", "+5"), "invalid_request"},
		{"ui_locales ignored", oidcAuthz(oidcRP, "openid", "ui_locales", "fr-CA fr en"), ""},
		{"claims_locales, acr_values, display ignored", oidcAuthz(oidcRP, "openid", "claims_locales", "fr", "acr_values", "x", "display", "popup"), ""},
		{"unknown parameter ignored", oidcAuthz(oidcRP, "openid", "foo", "bar"), ""},
		{"claims parameter ignored", oidcAuthz(oidcRP, "openid", "claims", `{"id_token":{"email":{"essential":true}}}`), ""},
		{"scopes in another order", oidcAuthz(oidcRP, "email openid"), ""},
		{"login_hint", oidcAuthz(oidcRP, "openid", "login_hint", "ada@example.com"), ""},
		{"response_type id_token", oidcAuthz(oidcRP, "openid", "response_type", "id_token"), "unsupported_response_type"},
		{"response_type code id_token", oidcAuthz(oidcRP, "openid", "response_type", "code id_token"), "unsupported_response_type"},
		{"response_mode query", oidcAuthz(oidcRP, "openid", "response_mode", "query"), ""},
		{"response_mode form_post", oidcAuthz(oidcRP, "openid", "response_mode", "form_post"), "invalid_request"},
		{"request object", oidcAuthz(oidcRP, "openid", "request", "eyJhbGciOiJub25lIn0.e30."), "request_not_supported"},
		{"request_uri by reference", oidcAuthz(oidcRP, "openid", "request_uri", "https://rp.example.com/request.jwt"), "request_uri_not_supported"},
		{"id_token_hint garbage", oidcAuthz(oidcRP, "openid", "id_token_hint", "abc"), "invalid_request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := env.s.ParseAuthorize(ctx, tc.q)
			if tc.wantError == "" {
				if err != nil {
					t.Fatalf("ParseAuthorize: %v; want valid", err)
				}
				return
			}
			var re *RedirectError
			if !errors.As(err, &re) || re.Err.Code != tc.wantError {
				t.Fatalf("ParseAuthorize: %v; want a redirect with %s", err, tc.wantError)
			}
			u, _ := url.Parse(re.URL)
			if !strings.HasPrefix(re.URL, tkRedirect+"?") || u.Query().Get("state") != "st" || u.Query().Get("iss") != tkIssuer {
				t.Fatalf("redirect %s; want the registered URI with state and iss", re.URL)
			}
		})
	}
	ar, err := env.s.ParseAuthorize(ctx, oidcAuthz(oidcRP, "openid profile", "nonce", "n1", "prompt", "login consent", "max_age", "60", "login_hint", "ada"))
	if err != nil {
		t.Fatal(err)
	}
	if !ar.OpenID || ar.Nonce != "n1" || !ar.HasPrompt(PromptLogin) || !ar.HasPrompt(PromptConsent) || !ar.HasMaxAge || ar.MaxAge != time.Minute || ar.LoginHint != "ada" {
		t.Fatalf("AuthorizeRequest %+v", ar)
	}
}

// idTokenFor signs an ID token of client for the env's user, as the
// token endpoint would have.
func (env *oidcEnv) idTokenFor(t *testing.T, client string, sub string, exp time.Time) string {
	t.Helper()
	tok, err := env.signer.SignWith("JWT", func(string) (jwt.Claims, error) {
		return jwt.MapClaims{"iss": tkIssuer, "sub": sub, "aud": client, "azp": client,
			"iat": exp.Add(-30 * time.Minute).Unix(), "exp": exp.Unix()}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestIDTokenHint: an id_token_hint must be an ID token of ours issued to
// the requesting client (expired is fine); an ID token of client A
// presented by client B, an access token, a token of another issuer or a
// forged one is invalid_request. A valid hint names its user.
func TestIDTokenHint(t *testing.T) {
	env := newOIDCEnv(t)
	ctx := context.Background()
	sub := strconv.FormatInt(env.user.ID, 10)
	ofRP := env.idTokenFor(t, oidcRP, sub, env.clock().Add(-24*time.Hour)) // expired a day ago
	access := env.exchange(t, oidcRP, env.approve(t, oidcAuthz(oidcRP, "openid"), env.clock())).AccessToken
	other, _ := env.signer.SignWith("JWT", func(string) (jwt.Claims, error) {
		return jwt.MapClaims{"iss": "https://evil.example.com", "sub": sub, "aud": oidcRP2}, nil
	})
	forged := ofRP[:strings.LastIndexByte(ofRP, '.')+1] + base64.RawURLEncoding.EncodeToString(make([]byte, 64))
	tests := []struct {
		name, client, hint string
		ok                 bool
	}{
		{"its own client's, expired", oidcRP, ofRP, true},
		{"client A's ID token presented by client B", oidcRP2, ofRP, false},
		{"an access token", oidcRP, access, false},
		{"another issuer's", oidcRP2, other, false},
		{"forged signature", oidcRP, forged, false},
	}
	for _, tc := range tests {
		ar, err := env.s.ParseAuthorize(ctx, oidcAuthz(tc.client, "openid", "id_token_hint", tc.hint))
		if tc.ok {
			if err != nil || ar.HintSubject != sub {
				t.Errorf("%s: %v, hint subject %q; want valid, %s", tc.name, err, ar.HintSubject, sub)
			}
			continue
		}
		var re *RedirectError
		if !errors.As(err, &re) || re.Err.Code != "invalid_request" {
			t.Errorf("%s: %v; want invalid_request", tc.name, err)
		}
	}
}

// TestInteract: what a request needs given the login (Core §3.1.2.1).
func TestInteract(t *testing.T) {
	env := newOIDCEnv(t)
	ctx := context.Background()
	now := env.clock()
	uid := env.user.ID
	fresh := &Login{UserID: uid, AuthTime: now.Add(-30 * time.Second)}
	old := &Login{UserID: uid, AuthTime: now.Add(-2 * time.Hour)}
	other := &Login{UserID: uid + 1, AuthTime: now}
	hint := env.idTokenFor(t, oidcRP, strconv.FormatInt(uid, 10), now)
	// A remembered consent of the user to rp for openid profile.
	if err := env.store.PutGrant(ctx, data.Grant{UserID: uid, ClientID: oidcRP, Scopes: []string{"openid", "profile"}, CreatedAt: now, UpdatedAt: now, Stamped: true}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		q         url.Values
		login     *Login
		want      Step
		wantError string
	}{
		{"nobody logged in", oidcAuthz(oidcRP, "openid"), nil, StepLogin, ""},
		{"logged in", oidcAuthz(oidcRP, "openid"), fresh, StepConsent, ""},
		{"prompt=login", oidcAuthz(oidcRP, "openid", "prompt", "login"), fresh, StepLogin, ""},
		{"prompt=select_account", oidcAuthz(oidcRP, "openid", "prompt", "select_account"), fresh, StepLogin, ""},
		{"prompt=consent with a remembered consent", oidcAuthz(oidcRP, "openid", "prompt", "consent"), fresh, StepConsent, ""},
		{"max_age satisfied", oidcAuthz(oidcRP, "openid", "max_age", "60"), fresh, StepConsent, ""},
		{"max_age exceeded", oidcAuthz(oidcRP, "openid", "max_age", "60"), old, StepLogin, ""},
		{"max_age=0", oidcAuthz(oidcRP, "openid", "max_age", "0"), fresh, StepLogin, ""},
		{"id_token_hint of the logged-in user", oidcAuthz(oidcRP, "openid", "id_token_hint", hint), fresh, StepConsent, ""},
		{"id_token_hint of another user", oidcAuthz(oidcRP, "openid", "id_token_hint", hint), other, StepLogin, ""},
		{"none, nobody logged in", oidcAuthz(oidcRP, "openid", "prompt", "none"), nil, 0, "login_required"},
		{"none, remembered consent", oidcAuthz(oidcRP, "openid", "prompt", "none"), fresh, StepApprove, ""},
		{"none, remembered consent covers fewer scopes", oidcAuthz(oidcRP, "openid email", "prompt", "none"), fresh, 0, "consent_required"},
		{"none, no consent to this client", oidcAuthz(oidcRP2, "openid", "prompt", "none"), fresh, 0, "consent_required"},
		{"none, max_age exceeded", oidcAuthz(oidcRP, "openid", "prompt", "none", "max_age", "60"), old, 0, "login_required"},
		{"none, hint of another user", oidcAuthz(oidcRP, "openid", "prompt", "none", "id_token_hint", hint), other, 0, "login_required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ar, err := env.s.ParseAuthorize(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			step, err := env.s.Interact(ctx, ar, tc.login)
			if tc.wantError == "" {
				if err != nil || step != tc.want {
					t.Fatalf("Interact = %v, %v; want %v", step, err, tc.want)
				}
				return
			}
			var re *RedirectError
			if !errors.As(err, &re) || re.Err.Code != tc.wantError {
				t.Fatalf("Interact = %v, %v; want %s", step, err, tc.wantError)
			}
			// The probe learns the spec's code and nothing else: the
			// registered URI with error, a fixed description, state, iss.
			u, _ := url.Parse(re.URL)
			got := u.Query()
			if len(got) != 4 || got.Get("state") != "st" || got.Get("iss") != tkIssuer || got.Get("error") != tc.wantError ||
				strings.Contains(re.URL, "ada") || strings.Contains(re.URL, strconv.FormatInt(uid, 10)+"&") {
				t.Fatalf("redirect %s carries more than error, error_description, state, iss", re.URL)
			}
		})
	}
}

// TestAfterLogin: coming back from the login does not ask for it again.
func TestAfterLogin(t *testing.T) {
	env := newOIDCEnv(t)
	ctx := context.Background()
	ar, _ := env.s.ParseAuthorize(ctx, oidcAuthz(oidcRP, "openid", "prompt", "login consent", "max_age", "0", "nonce", "n"))
	q := env.s.AfterLogin(ar)
	if q.Get("prompt") != "consent" || q.Has("max_age") || q.Get("nonce") != "n" {
		t.Fatalf("AfterLogin = %v; want prompt=consent, no max_age, the nonce kept", q)
	}
	back, err := env.s.ParseAuthorize(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if step, err := env.s.Interact(ctx, back, &Login{UserID: env.user.ID, AuthTime: env.clock().Add(-time.Second)}); step != StepConsent || err != nil {
		t.Fatalf("after the login: %v, %v; want the consent page", step, err)
	}
	// A pushed request: the parameters are sealed; the continuation is
	// sealed again without them.
	uri := env.push(t, "prompt", "login", "max_age", "10", "nonce", "pn")
	par, err := env.s.CheckAuthorize(ctx, url.Values{"client_id": {"pub"}, "request_uri": {uri}})
	if err != nil || !par.HasPrompt(PromptLogin) || !par.HasMaxAge || par.Nonce != "pn" {
		t.Fatalf("pushed request %+v, %v; want its OpenID Connect parameters", par, err)
	}
	cont := env.s.AfterLogin(par)
	again, err := env.s.ParseAuthorize(ctx, cont)
	if err != nil || again.HasPrompt(PromptLogin) || again.HasMaxAge || again.Nonce != "pn" {
		t.Fatalf("continuation after login %+v, %v; want prompt login and max_age gone, the nonce kept", again, err)
	}
}

// TestNonceReplay: a nonce yields one authorization per client.
func TestNonceReplay(t *testing.T) {
	env := newOIDCEnv(t)
	ctx := context.Background()
	q := oidcAuthz(oidcRP, "openid", "nonce", "same-nonce")
	env.approve(t, q, env.clock())
	_, err := env.s.ApproveLogin(ctx, q, Login{UserID: env.user.ID, AuthTime: env.clock()})
	var re *RedirectError
	if !errors.As(err, &re) || re.Err.Code != "invalid_request" {
		t.Fatalf("second approval with the same nonce: %v; want invalid_request", err)
	}
	// Another client may pick the same value.
	env.approve(t, oidcAuthz(oidcRP2, "openid", "nonce", "same-nonce"), env.clock())
	// Without openid, a nonce is not an OpenID Connect nonce: not used up.
	env.approve(t, oidcAuthz(oidcRP, "PROFILE_READ", "nonce", "x"), env.clock())
	env.approve(t, oidcAuthz(oidcRP, "PROFILE_READ", "nonce", "x"), env.clock())
}

// TestCheckLogout: RP-Initiated Logout's redirect goes only to a
// registered post-logout URI of the hint's client, matched exactly.
func TestCheckLogout(t *testing.T) {
	env := newOIDCEnv(t)
	ctx := context.Background()
	sub := strconv.FormatInt(env.user.ID, 10)
	hintRP := env.idTokenFor(t, oidcRP, sub, env.clock().Add(-48*time.Hour))
	hintRP2 := env.idTokenFor(t, oidcRP2, sub, env.clock())
	access := env.exchange(t, oidcRP, env.approve(t, oidcAuthz(oidcRP, "openid"), env.clock())).AccessToken
	// A pending (unreviewed) post-logout URI of rp.
	env.store.UpdateClient(ctx, oidcRP, func(c data.Client) (data.Client, error) {
		c.Pending = &data.ClientChange{AddPostLogoutRedirectURIs: []string{"https://rp.example.com/new"}, ProposedBy: "owner", ProposedAt: tkT0}
		return c, nil
	})
	q := func(kv ...string) url.Values {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v
	}
	tests := []struct {
		name         string
		q            url.Values
		wantSubject  bool
		wantRedirect string
	}{
		{"hint and registered URI with state", q("id_token_hint", hintRP, "post_logout_redirect_uri", oidcLogout, "state", "s1"), true, oidcLogout + "?state=s1"},
		{"registered URI with a query", q("id_token_hint", hintRP, "post_logout_redirect_uri", "https://rp.example.com/bye?tenant=1", "state", "s"), true, "https://rp.example.com/bye?tenant=1&state=s"},
		{"no state", q("id_token_hint", hintRP, "post_logout_redirect_uri", oidcLogout), true, oidcLogout},
		{"hint, no URI", q("id_token_hint", hintRP), true, ""},
		{"URI without hint", q("post_logout_redirect_uri", oidcLogout, "client_id", oidcRP), false, ""},
		{"unregistered URI", q("id_token_hint", hintRP, "post_logout_redirect_uri", "https://evil.example.com/"), true, ""},
		{"prefix of a registered URI", q("id_token_hint", hintRP, "post_logout_redirect_uri", "https://rp.example.com/logged"), true, ""},
		{"registered URI plus a path", q("id_token_hint", hintRP, "post_logout_redirect_uri", oidcLogout+"/../../evil"), true, ""},
		{"registered URI plus a query", q("id_token_hint", hintRP, "post_logout_redirect_uri", oidcLogout+"?next=https://evil.example.com"), true, ""},
		{"registered URI in other case", q("id_token_hint", hintRP, "post_logout_redirect_uri", strings.ToUpper(oidcLogout)), true, ""},
		{"registered URI with a fragment", q("id_token_hint", hintRP, "post_logout_redirect_uri", oidcLogout+"#x"), true, ""},
		{"another client's registered URI", q("id_token_hint", hintRP, "post_logout_redirect_uri", oidcLogout2), true, ""},
		{"client B's hint with client A's URI", q("id_token_hint", hintRP2, "post_logout_redirect_uri", oidcLogout), true, ""},
		{"client_id other than the hint's audience", q("id_token_hint", hintRP, "client_id", oidcRP2, "post_logout_redirect_uri", oidcLogout2), false, ""},
		{"pending post-logout URI", q("id_token_hint", hintRP, "post_logout_redirect_uri", "https://rp.example.com/new"), true, ""},
		{"access token as hint", q("id_token_hint", access, "post_logout_redirect_uri", oidcLogout), false, ""},
		{"repeated parameter", q("id_token_hint", hintRP, "post_logout_redirect_uri", oidcLogout, "post_logout_redirect_uri", "https://evil.example.com/"), false, ""},
		{"state with a control character", q("id_token_hint", hintRP, "post_logout_redirect_uri", oidcLogout, "state", "a\nb"), true, oidcLogout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lr, err := env.s.CheckLogout(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if (lr.Subject == sub) != tc.wantSubject || lr.Redirect != tc.wantRedirect {
				t.Fatalf("CheckLogout = %+v; want subject %v, redirect %q", lr, tc.wantSubject, tc.wantRedirect)
			}
		})
	}
}

// TestUserinfoRefusals: userinfo answers 401 invalid_token for a revoked
// grant (as /v2/me), and 403 insufficient_scope for a token without
// openid.
func TestUserinfoRefusals(t *testing.T) {
	env := newOIDCEnv(t)
	tok := env.exchange(t, oidcRP, env.approve(t, oidcAuthz(oidcRP, "openid profile"), env.clock()))
	bearer := [][2]string{{"Authorization", "Bearer " + tok.AccessToken}}
	if rec := env.do(tkReq{path: userinfoPath, method: http.MethodGet, ct: "none", header: bearer}); rec.Code != http.StatusOK {
		t.Fatalf("userinfo = %d %s", rec.Code, rec.Body)
	}
	noOpenID := env.exchange(t, oidcRP, env.approve(t, oidcAuthz(oidcRP, "PROFILE_READ"), env.clock()))
	rec := env.do(tkReq{path: userinfoPath, method: http.MethodGet, ct: "none", header: [][2]string{{"Authorization", "Bearer " + noOpenID.AccessToken}}})
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Header().Get("WWW-Authenticate"), `error="insufficient_scope"`) {
		t.Fatalf("userinfo without openid = %d %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
	}
	// No credentials at all: a bare challenge, no error code and no body
	// (RFC 6750 §3.1), as at /v2/me.
	rec = env.do(tkReq{path: userinfoPath, method: http.MethodGet, ct: "none"})
	if rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") != "Bearer" || rec.Body.Len() != 0 {
		t.Fatalf("userinfo without a token = %d %q %q; want 401, a bare Bearer challenge, no body", rec.Code, rec.Header().Get("WWW-Authenticate"), rec.Body)
	}
	// Revoke the grant (RFC 7009): the token is refused at once.
	if rec := env.do(tkReq{path: "/v2/auth/oauth2/revoke", body: tkForm("token", tok.RefreshToken, "client_id", oidcRP, "client_secret", oidcRPSecret)}); rec.Code != http.StatusOK {
		t.Fatalf("revoke = %d %s", rec.Code, rec.Body)
	}
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		rec = env.do(tkReq{path: userinfoPath, method: m, ct: "none", header: bearer})
		if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Header().Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Fatalf("%s userinfo after revocation = %d %q; want 401 invalid_token", m, rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
	}
}

// TestDiscoveryDocument: /.well-known/openid-configuration is the RFC
// 8414 document, byte for byte, with the OpenID Connect members.
func TestDiscoveryDocument(t *testing.T) {
	env := newOIDCEnv(t)
	a := env.do(tkReq{path: "/.well-known/openid-configuration", method: http.MethodGet, ct: "none"})
	b := env.do(tkReq{path: "/.well-known/oauth-authorization-server", method: http.MethodGet, ct: "none"})
	if a.Code != http.StatusOK || a.Body.String() != b.Body.String() {
		t.Fatalf("openid-configuration = %d; differs from the RFC 8414 document", a.Code)
	}
	var m map[string]any
	json.Unmarshal(a.Body.Bytes(), &m)
	scopes, _ := m["scopes_supported"].([]any)
	for _, s := range []string{"openid", "profile", "email"} {
		if !slices.Contains(scopes, any(s)) {
			t.Errorf("scopes_supported lacks %s", s)
		}
	}
	if m["issuer"] != tkIssuer || m["response_types_supported"].([]any)[0] != "code" || len(m["response_types_supported"].([]any)) != 1 {
		t.Errorf("discovery %v", m)
	}
}

// TestUserinfoCORS: a browser page of the token's own (public) client may
// read userinfo; another origin gets no Access-Control-Allow-Origin. The
// discovery document is open to every origin, like the RFC 8414 one.
func TestUserinfoCORS(t *testing.T) {
	env := newOIDCEnv(t)
	ctx := context.Background()
	env.store.UpdateClient(ctx, oidcSPA, func(c data.Client) (data.Client, error) {
		c.RedirectURIs = []string{"https://spa.example.com/cb"}
		return c, nil
	})
	to, err := env.s.ApproveLogin(ctx, url.Values{"client_id": {oidcSPA}, "redirect_uri": {"https://spa.example.com/cb"}, "response_type": {"code"},
		"scope": {"openid"}, "nonce": {"n"}, "code_challenge": {tkChallenge(tkVerifier)}}, Login{UserID: env.user.ID, AuthTime: env.clock()})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(to)
	rec := env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", u.Query().Get("code"), "redirect_uri", "https://spa.example.com/cb",
		"client_id", oidcSPA, "code_verifier", tkVerifier)})
	var tok oidcTokens
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &tok) != nil {
		t.Fatalf("exchange = %d %s", rec.Code, rec.Body)
	}
	pre := env.do(tkReq{path: userinfoPath, method: http.MethodOptions, ct: "none",
		header: [][2]string{{"Origin", "https://spa.example.com"}, {"Access-Control-Request-Method", "GET"}, {"Access-Control-Request-Headers", "authorization"}}})
	if pre.Header().Get("Access-Control-Allow-Origin") != "https://spa.example.com" || !strings.Contains(pre.Header().Get("Access-Control-Allow-Methods"), "GET") {
		t.Fatalf("preflight = %d %v", pre.Code, pre.Header())
	}
	for origin, want := range map[string]string{"https://spa.example.com": "https://spa.example.com", "https://evil.example.com": ""} {
		rec := env.do(tkReq{path: userinfoPath, method: http.MethodGet, ct: "none",
			header: [][2]string{{"Authorization", "Bearer " + tok.AccessToken}, {"Origin", origin}}})
		if rec.Code != http.StatusOK || rec.Header().Get("Access-Control-Allow-Origin") != want {
			t.Errorf("userinfo from %s = %d, Access-Control-Allow-Origin %q; want %q", origin, rec.Code, rec.Header().Get("Access-Control-Allow-Origin"), want)
		}
	}
	if rec := env.do(tkReq{path: "/.well-known/openid-configuration", method: http.MethodGet, ct: "none"}); rec.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Error("the discovery document is not open to every origin")
	}
}

// TestUserinfoDPoP: a DPoP-bound access token works at userinfo with the
// DPoP scheme and a proof by its key (RFC 9449 §7), and not as Bearer.
func TestUserinfoDPoP(t *testing.T) {
	env := newOIDCEnv(t)
	k := dpoptest.NewES256()
	code := env.approve(t, oidcAuthz(oidcRP, "openid profile"), env.clock())
	rec := env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect,
		"client_id", oidcRP, "client_secret", oidcRPSecret, "code_verifier", tkVerifier), header: [][2]string{env.proof(k)}})
	var tok oidcTokens
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &tok) != nil || tok.TokenType != "DPoP" || tok.IDToken == "" {
		t.Fatalf("DPoP exchange = %d %s", rec.Code, rec.Body)
	}
	htu := tkIssuer + userinfoPath
	rec = env.do(tkReq{path: userinfoPath, method: http.MethodGet, ct: "none",
		header: [][2]string{{"Authorization", "DPoP " + tok.AccessToken}, {"DPoP", k.Proof("GET", htu, tok.AccessToken)}}})
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"name":"Ada Lovelace"`) {
		t.Fatalf("userinfo with DPoP = %d %s", rec.Code, rec.Body)
	}
	rec = env.do(tkReq{path: userinfoPath, method: http.MethodGet, ct: "none", header: [][2]string{{"Authorization", "Bearer " + tok.AccessToken}}})
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("the bound token as Bearer = %d; want 401", rec.Code)
	}
	rec = env.do(tkReq{path: userinfoPath, method: http.MethodGet, ct: "none",
		header: [][2]string{{"Authorization", "DPoP " + tok.AccessToken}, {"DPoP", dpoptest.NewES256().Proof("GET", htu, tok.AccessToken)}}})
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("a proof by another key = %d; want 401", rec.Code)
	}
}
