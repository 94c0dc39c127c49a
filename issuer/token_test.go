package issuer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"oauthd/data"
	"oauthd/issuer/throttle"
)

// TestTokenErrors runs every /token error case through the router, each on
// a fresh server.
func TestTokenErrors(t *testing.T) {
	form := "application/x-www-form-urlencoded"
	tests := []struct {
		name       string
		req        func(env *tkEnv) tkReq
		wantStatus int
		wantCode   string
		wantBasic  bool // WWW-Authenticate: Basic expected
	}{
		{"wrong content type", func(env *tkEnv) tkReq {
			return tkReq{ct: "text/plain", body: tkForm("grant_type", "refresh_token")}
		}, 400, "invalid_request", false},
		{"missing content type", func(env *tkEnv) tkReq {
			return tkReq{ct: "none", body: tkForm("grant_type", "refresh_token")}
		}, 400, "invalid_request", false},
		{"charset not utf-8", func(env *tkEnv) tkReq {
			return tkReq{ct: form + "; charset=iso-8859-1", body: tkForm("grant_type", "refresh_token")}
		}, 400, "invalid_request", false},
		{"body over 64 KiB", func(env *tkEnv) tkReq {
			return tkReq{body: "grant_type=refresh_token&x=" + strings.Repeat("a", 64<<10)}
		}, 413, "invalid_request", false},
		{"parameter twice", func(env *tkEnv) tkReq {
			return tkReq{body: "grant_type=refresh_token&grant_type=refresh_token&client_id=conf&client_secret=" + env.secretA}
		}, 400, "invalid_request", false},
		{"client_secret in URL", func(env *tkEnv) tkReq {
			return tkReq{query: "client_secret=" + env.secretA, body: tkForm("grant_type", "refresh_token", "client_id", "conf")}
		}, 400, "invalid_request", false},
		{"code in URL", func(env *tkEnv) tkReq {
			return tkReq{query: "code=x", body: tkForm("grant_type", "authorization_code", "client_id", "conf", "client_secret", env.secretA)}
		}, 400, "invalid_request", false},
		{"invalid UTF-8", func(env *tkEnv) tkReq {
			return tkReq{body: "grant_type=refresh_token&refresh_token=%ff%fe"}
		}, 400, "invalid_request", false},
		{"NUL byte", func(env *tkEnv) tkReq {
			return tkReq{body: "grant_type=refresh_token&refresh_token=a%00b"}
		}, 400, "invalid_request", false},
		{"value over 4096 bytes", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "refresh_token", "scope", strings.Repeat("A", 4097))}
		}, 400, "invalid_request", false},
		{"malformed form", func(env *tkEnv) tkReq {
			return tkReq{body: "grant_type=refresh_token&x=%zz"}
		}, 400, "invalid_request", false},
		{"JSON number value", func(env *tkEnv) tkReq {
			return tkReq{ct: "application/json", body: `{"grant_type":"refresh_token","client_id":5}`}
		}, 400, "invalid_request", false},
		{"JSON array value", func(env *tkEnv) tkReq {
			return tkReq{ct: "application/json", body: `{"grant_type":["refresh_token"]}`}
		}, 400, "invalid_request", false},
		{"JSON duplicate key", func(env *tkEnv) tkReq {
			return tkReq{ct: "application/json", body: `{"grant_type":"refresh_token","grant_type":"authorization_code"}`}
		}, 400, "invalid_request", false},
		{"JSON not an object", func(env *tkEnv) tkReq {
			return tkReq{ct: "application/json", body: `["grant_type"]`}
		}, 400, "invalid_request", false},
		{"JSON trailing data", func(env *tkEnv) tkReq {
			return tkReq{ct: "application/json", body: `{"grant_type":"refresh_token"} {}`}
		}, 400, "invalid_request", false},
		{"JSON NUL escape", func(env *tkEnv) tkReq {
			return tkReq{ct: "application/json", body: `{"grant_type":"refresh\u0000token"}`}
		}, 400, "invalid_request", false},
		{"missing grant_type", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("client_id", "conf", "client_secret", env.secretA)}
		}, 400, "invalid_request", false},
		{"unsupported grant_type", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "password", "client_id", "conf", "client_secret", env.secretA)}
		}, 400, "unsupported_grant_type", false},
		{"both auth methods", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "refresh_token", "client_secret", env.secretA),
				header: [][2]string{tkBasic("conf", env.secretA)}}
		}, 400, "invalid_request", false},
		{"Basic and a different body client_id", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "refresh_token", "client_id", "other"),
				header: [][2]string{tkBasic("conf", env.secretA)}}
		}, 400, "invalid_request", false},
		{"Bearer instead of Basic", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "refresh_token"), header: [][2]string{{"Authorization", "Bearer x"}}}
		}, 400, "invalid_request", false},
		{"malformed Basic", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "refresh_token"), header: [][2]string{{"Authorization", "Basic !!!"}}}
		}, 401, "invalid_client", true},
		{"no client authentication", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "refresh_token", "refresh_token", "x")}
		}, 401, "invalid_client", false},
		{"unknown client", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "refresh_token", "client_id", "nobody", "client_secret", env.secretA)}
		}, 401, "invalid_client", false},
		{"wrong secret in body", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "refresh_token", "client_id", "conf", "client_secret", env.otherSecret)}
		}, 401, "invalid_client", false},
		{"wrong secret by Basic", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "refresh_token"), header: [][2]string{tkBasic("conf", env.otherSecret)}}
		}, 401, "invalid_client", true},
		{"confidential client without secret", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "refresh_token", "client_id", "conf")}
		}, 401, "invalid_client", false},
		{"pending client", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "authorization_code", "code", env.code(tkCodeOpts{client: "pending"}),
				"redirect_uri", tkRedirect, "client_id", "pending", "client_secret", env.secretA)}
		}, 401, "invalid_client", false},
		{"public client sending a secret", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "authorization_code", "code", env.code(tkCodeOpts{client: "pub", challenge: tkChallenge(tkVerifier)}),
				"redirect_uri", tkRedirect, "code_verifier", tkVerifier, "client_id", "pub", "client_secret", "anything")}
		}, 401, "invalid_client", false},
		{"missing code", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "authorization_code", "redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)}
		}, 400, "invalid_request", false},
		{"missing redirect_uri", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "authorization_code", "code", env.code(tkCodeOpts{client: "conf"}), "client_id", "conf", "client_secret", env.secretA)}
		}, 400, "invalid_request", false},
		{"unknown code", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "authorization_code", "code", "oauthd_ac_nope", "redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)}
		}, 400, "invalid_grant", false},
		{"expired code", func(env *tkEnv) tkReq {
			code := env.code(tkCodeOpts{client: "conf"})
			env.advance(time.Minute)
			return tkReq{body: tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)}
		}, 400, "invalid_grant", false},
		{"redirect_uri mismatch", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "authorization_code", "code", env.code(tkCodeOpts{client: "conf"}),
				"redirect_uri", tkRedirect+"/", "client_id", "conf", "client_secret", env.secretA)}
		}, 400, "invalid_grant", false},
		{"code of another client", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "authorization_code", "code", env.code(tkCodeOpts{client: "conf"}),
				"redirect_uri", tkRedirect, "client_id", "other", "client_secret", env.otherSecret)}
		}, 400, "invalid_grant", false},
		{"PKCE verifier missing", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "authorization_code", "code", env.code(tkCodeOpts{client: "pub", challenge: tkChallenge(tkVerifier)}),
				"redirect_uri", tkRedirect, "client_id", "pub")}
		}, 400, "invalid_grant", false},
		{"PKCE verifier wrong", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "authorization_code", "code", env.code(tkCodeOpts{client: "pub", challenge: tkChallenge(tkVerifier)}),
				"redirect_uri", tkRedirect, "client_id", "pub", "code_verifier", strings.Repeat("x", 43))}
		}, 400, "invalid_grant", false},
		{"PKCE verifier too short", func(env *tkEnv) tkReq {
			v := tkVerifier[:42]
			return tkReq{body: tkForm("grant_type", "authorization_code", "code", env.code(tkCodeOpts{client: "pub", challenge: tkChallenge(v)}),
				"redirect_uri", tkRedirect, "client_id", "pub", "code_verifier", v)}
		}, 400, "invalid_grant", false},
		{"PKCE verifier with a bad character", func(env *tkEnv) tkReq {
			v := tkVerifier[:42] + "+"
			return tkReq{body: tkForm("grant_type", "authorization_code", "code", env.code(tkCodeOpts{client: "pub", challenge: tkChallenge(v)}),
				"redirect_uri", tkRedirect, "client_id", "pub", "code_verifier", v)}
		}, 400, "invalid_grant", false},
		{"confidential client's challenge without verifier", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "authorization_code", "code", env.code(tkCodeOpts{client: "conf", challenge: tkChallenge(tkVerifier)}),
				"redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)}
		}, 400, "invalid_grant", false},
		{"verifier without challenge (downgrade)", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "authorization_code", "code", env.code(tkCodeOpts{client: "conf"}),
				"redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA, "code_verifier", tkVerifier)}
		}, 400, "invalid_grant", false},
		{"public client code without challenge", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "authorization_code", "code", env.code(tkCodeOpts{client: "pub"}),
				"redirect_uri", tkRedirect, "client_id", "pub")}
		}, 400, "invalid_grant", false},
		{"missing refresh_token", func(env *tkEnv) tkReq {
			return tkReq{body: tkForm("grant_type", "refresh_token", "client_id", "conf", "client_secret", env.secretA)}
		}, 400, "invalid_request", false},
		{"malformed refresh_token", func(env *tkEnv) tkReq {
			return env.refreshReq("conf", env.secretA, "oauthd_rt_short.x")
		}, 400, "invalid_grant", false},
		{"unknown refresh_token", func(env *tkEnv) tkReq {
			return env.refreshReq("conf", env.secretA, data.NewRefreshToken(data.NewFamilyID(time.Now()), 0, env.s.refreshKey))
		}, 400, "invalid_grant", false},
		{"refresh token of another client", func(env *tkEnv) tkReq {
			return env.refreshReq("other", env.otherSecret, env.exchange().RefreshToken)
		}, 400, "invalid_grant", false},
		{"refresh widening scope", func(env *tkEnv) tkReq {
			return env.refreshReq("conf", env.secretA, env.exchange().RefreshToken, "scope", "PROFILE_READ EVENT_TYPE_READ")
		}, 400, "invalid_scope", false},
		{"refresh with unknown scope", func(env *tkEnv) tkReq {
			return env.refreshReq("conf", env.secretA, env.exchange().RefreshToken, "scope", "ROOT")
		}, 400, "invalid_scope", false},
		{"refresh after idle expiry", func(env *tkEnv) tkReq {
			rt := env.exchange().RefreshToken
			env.advance(30 * 24 * time.Hour)
			return env.refreshReq("conf", env.secretA, rt)
		}, 400, "invalid_grant", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newTkEnv(t)
			rec := env.do(tc.req(env))
			if rec.Code != tc.wantStatus {
				t.Errorf("status = %d; want %d (body %s)", rec.Code, tc.wantStatus, rec.Body)
			}
			if got := tkOAuthErr(t, rec); got != tc.wantCode {
				t.Errorf("error = %q; want %q (body %s)", got, tc.wantCode, rec.Body)
			}
			got := rec.Header().Get("WWW-Authenticate")
			if want := map[bool]string{true: `Basic realm="oauthd"`}[tc.wantBasic]; got != want {
				t.Errorf("WWW-Authenticate = %q; want %q", got, want)
			}
			if rec.Header().Get("Pragma") != "no-cache" {
				t.Errorf("Pragma = %q; want no-cache", rec.Header().Get("Pragma"))
			}
			if strings.Contains(rec.Body.String(), env.secretA) {
				t.Errorf("error body leaks the secret: %s", rec.Body)
			}
		})
	}
}

// TestTokenCodeExchange exchanges a code with each body encoding and by
// Basic, and checks the exact response shape, the headers and the JWT.
func TestTokenCodeExchange(t *testing.T) {
	tests := []struct {
		name string
		req  func(env *tkEnv, code string) tkReq
	}{
		{"form, secret in body", func(env *tkEnv, code string) tkReq {
			return tkReq{body: tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)}
		}},
		{"JSON, secret in body", func(env *tkEnv, code string) tkReq {
			return tkReq{ct: "application/json; charset=UTF-8", body: tkJSON("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)}
		}},
		{"form, Basic, second secret", func(env *tkEnv, code string) tkReq {
			return tkReq{body: tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect, "client_id", "conf"),
				header: [][2]string{tkBasic("conf", env.secretB)}}
		}},
		{"JSON, Basic, empty values are absent", func(env *tkEnv, code string) tkReq {
			return tkReq{ct: "application/json", body: tkJSON("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect, "client_secret", "", "code_verifier", ""),
				header: [][2]string{tkBasic("conf", env.secretA)}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newTkEnv(t)
			rec := env.do(tc.req(env, env.code(tkCodeOpts{client: "conf"})))
			if rec.Code != http.StatusOK {
				t.Fatalf("status = %d, body %s", rec.Code, rec.Body)
			}
			for h, want := range map[string]string{"Cache-Control": "no-store", "Pragma": "no-cache", "Content-Type": "application/json"} {
				if got := rec.Header().Get(h); got != want {
					t.Errorf("%s = %q; want %q", h, got, want)
				}
			}
			var raw map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
				t.Fatal(err)
			}
			keys := make([]string, 0, len(raw))
			for k := range raw {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if want := []string{"access_token", "expires_in", "refresh_token", "scope", "token_type"}; !slices.Equal(keys, want) {
				t.Errorf("response keys = %v; want %v", keys, want)
			}
			if raw["token_type"] != "bearer" || raw["expires_in"] != float64(1800) || raw["scope"] != "PROFILE_READ BOOKING_READ" {
				t.Errorf("response = %v", raw)
			}
			rt, _ := raw["refresh_token"].(string)
			if _, ok := data.ParseRefreshToken(rt); !ok {
				t.Errorf("refresh_token %q is not of our form", rt)
			}
			at, _ := raw["access_token"].(string)
			tkCheckJWT(t, env, at, "conf", "PROFILE_READ BOOKING_READ", false)
		})
	}
}

// tkCheckJWT decodes an access token without trusting it, checks its header
// and claims, and then verifies it with the real verifier.
func tkCheckJWT(t *testing.T, env *tkEnv, at, clientID, wantScope string, wantUnrestricted bool) {
	t.Helper()
	parts := strings.Split(at, ".")
	if len(parts) != 3 {
		t.Fatalf("access token has %d parts", len(parts))
	}
	var hdr map[string]any
	var claims map[string]any
	for i, dst := range []*map[string]any{&hdr, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			t.Fatal(err)
		}
	}
	if hdr["typ"] != "at+jwt" || hdr["alg"] != "ES256" || hdr["kid"] != "test-kid" {
		t.Errorf("header = %v; want typ at+jwt, alg ES256, kid test-kid", hdr)
	}
	iat, _ := claims["iat"].(float64)
	exp, _ := claims["exp"].(float64)
	if int64(iat) != env.clock().Unix() || exp-iat != 1800 {
		t.Errorf("iat = %v, exp = %v; want iat = now and exp = iat + 1800", iat, exp)
	}
	if claims["iss"] != tkIssuer || claims["aud"] != tkIssuer || claims["sub"] != "7" || claims["client_id"] != clientID {
		t.Errorf("claims = %v", claims)
	}
	if jti, _ := claims["jti"].(string); len(jti) != 22 {
		t.Errorf("jti = %q; want 16 random bytes base64url", jti)
	}
	gotScope, hasScope := claims["scope"]
	gotUnr, hasUnr := claims["unrestricted"]
	if wantUnrestricted {
		if hasScope || gotUnr != true {
			t.Errorf("legacy claims: scope %v (present %v), unrestricted %v; want no scope, unrestricted true", gotScope, hasScope, gotUnr)
		}
	} else if gotScope != wantScope || hasUnr {
		t.Errorf("scope = %v, unrestricted present %v; want %q and no unrestricted", gotScope, hasUnr, wantScope)
	}
	vc, err := env.s.cfg.Verifier.Verify(context.Background(), at)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if vc.Unrestricted != wantUnrestricted || strings.Join(vc.Scopes, " ") != wantScope && !wantUnrestricted {
		t.Errorf("verified claims = %+v", vc)
	}
}

func TestTokenPublicClientPKCE(t *testing.T) {
	env := newTkEnv(t)
	code := env.code(tkCodeOpts{client: "pub", challenge: tkChallenge(tkVerifier), scopes: []string{"PROFILE_READ"}})
	// A wrong verifier fails and writes nothing: the code still works.
	rec := env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect, "client_id", "pub", "code_verifier", strings.Repeat("a", 43))})
	if got := tkOAuthErr(t, rec); got != "invalid_grant" {
		t.Fatalf("wrong verifier: error = %q", got)
	}
	tok := env.mustTokens(env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect, "client_id", "pub", "code_verifier", tkVerifier)}))
	tkCheckJWT(t, env, tok.AccessToken, "pub", "PROFILE_READ", false)
	// A public client refreshes with its client_id only.
	tok = env.mustTokens(env.do(tkReq{body: tkForm("grant_type", "refresh_token", "refresh_token", tok.RefreshToken, "client_id", "pub")}))
	if tok.Scope != "PROFILE_READ" {
		t.Errorf("scope = %q", tok.Scope)
	}
}

func TestTokenLegacyUnrestricted(t *testing.T) {
	env := newTkEnv(t)
	code := env.code(tkCodeOpts{client: "legacy", unrestricted: true})
	rec := env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect, "client_id", "legacy", "client_secret", env.legacySecret)})
	if strings.Contains(rec.Body.String(), `"scope"`) {
		t.Errorf("legacy response carries scope: %s", rec.Body)
	}
	tok := env.mustTokens(rec)
	tkCheckJWT(t, env, tok.AccessToken, "legacy", "", true)
	tok = env.mustTokens(env.do(env.refreshReq("legacy", env.legacySecret, tok.RefreshToken)))
	tkCheckJWT(t, env, tok.AccessToken, "legacy", "", true)
}

func TestTokenBasicSpecialCharacters(t *testing.T) {
	env := newTkEnv(t)
	id, secret := "my app:1&x+y", "p@ss:wo+rd/ü %&="
	c := data.Client{ID: id, Name: "Special", OwnerID: 1, Type: data.Confidential, RedirectURIs: []string{tkRedirect},
		Scopes: []string{"PROFILE_READ"}, Status: data.StatusApproved, CreatedAt: tkT0,
		Secrets: []data.ClientSecret{{ID: "cs_s", Hash: data.Hash(secret), CreatedAt: tkT0}}}
	if err := env.store.CreateClient(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	code := env.code(tkCodeOpts{client: id, scopes: []string{"PROFILE_READ"}})
	tok := env.mustTokens(env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect),
		header: [][2]string{tkBasic(id, secret)}}))
	// Without the form-encoding inside Basic the '+' means a space: it fails.
	raw := "Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+secret))
	rec := env.do(tkReq{body: tkForm("grant_type", "refresh_token", "refresh_token", tok.RefreshToken), header: [][2]string{{"Authorization", raw}}})
	if rec.Code == http.StatusOK {
		t.Errorf("un-encoded Basic credentials with '+', '%%' accepted")
	}
}

func TestTokenCodeReplayRevokesFamily(t *testing.T) {
	env := newTkEnv(t)
	code := env.code(tkCodeOpts{client: "conf"})
	req := tkReq{body: tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)}
	tok := env.mustTokens(env.do(req))
	if got := tkOAuthErr(t, env.do(req)); got != "invalid_grant" {
		t.Fatalf("replay: error = %q; want invalid_grant", got)
	}
	if got := tkOAuthErr(t, env.do(env.refreshReq("conf", env.secretA, tok.RefreshToken))); got != "invalid_grant" {
		t.Errorf("refresh after replay: error = %q; want invalid_grant (family revoked)", got)
	}
	if logs := env.logs.String(); !strings.Contains(logs, `"event":"code_replay"`) || strings.Contains(logs, code) {
		t.Errorf("audit log: want code_replay and never the code; got %s", logs)
	}
}

func TestTokenCodeReplayByStrangerKeepsFamily(t *testing.T) {
	env := newTkEnv(t)
	code := env.code(tkCodeOpts{client: "conf"})
	tok := env.mustTokens(env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect, "client_id", "conf", "client_secret", env.secretA)}))
	rec := env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect, "client_id", "other", "client_secret", env.otherSecret)})
	if got := tkOAuthErr(t, rec); got != "invalid_grant" {
		t.Fatalf("stranger replay: error = %q", got)
	}
	env.mustTokens(env.do(env.refreshReq("conf", env.secretA, tok.RefreshToken)))
}

func TestTokenRefreshRotationAndReuse(t *testing.T) {
	env := newTkEnv(t)
	r1 := env.exchange().RefreshToken
	env.advance(time.Hour)
	tok2 := env.mustTokens(env.do(env.refreshReq("conf", env.secretA, r1)))
	if tok2.RefreshToken == r1 || tok2.Scope != "PROFILE_READ BOOKING_READ" {
		t.Fatalf("rotation: %+v", tok2)
	}
	tkCheckJWT(t, env, tok2.AccessToken, "conf", "PROFILE_READ BOOKING_READ", false)
	famID, _ := data.ParseRefreshToken(r1)
	fam, err := env.store.GetFamily(context.Background(), famID)
	if err != nil {
		t.Fatal(err)
	}
	if fam.Generation != 1 || !fam.RotatedAt.Equal(env.clock()) || !fam.ExpiresAt.Equal(env.clock().Add(30*24*time.Hour)) {
		t.Errorf("family after rotation: gen %d rotated %v expires %v", fam.Generation, fam.RotatedAt, fam.ExpiresAt)
	}
	// Reusing r1 fails and revokes the family: r2 fails too.
	if got := tkOAuthErr(t, env.do(env.refreshReq("conf", env.secretA, r1))); got != "invalid_grant" {
		t.Fatalf("reuse: error = %q", got)
	}
	if got := tkOAuthErr(t, env.do(env.refreshReq("conf", env.secretA, tok2.RefreshToken))); got != "invalid_grant" {
		t.Errorf("current token after reuse: error = %q; want invalid_grant", got)
	}
	if got := tkCounter(t, env.s.metrics.refreshReuse); got != 1 {
		t.Errorf("reuse counter = %v; want 1", got)
	}
	if got := tkCounter(t, env.s.metrics.tokenRequests.WithLabelValues("refresh_token", "invalid_grant")); got != 2 {
		t.Errorf("refresh invalid_grant counter = %v; want 2", got)
	}
	if got := tkCounter(t, env.s.metrics.tokenRequests.WithLabelValues("authorization_code", "ok")); got != 1 {
		t.Errorf("code ok counter = %v; want 1", got)
	}
	logs := env.logs.String()
	if !strings.Contains(logs, `"event":"refresh_token_reuse"`) || !strings.Contains(logs, `"user_id":7`) {
		t.Errorf("audit log lacks refresh_token_reuse: %s", logs)
	}
	for _, secret := range []string{r1, tok2.RefreshToken, env.secretA, tok2.AccessToken} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain a credential")
		}
	}
}

func TestTokenRefreshAbsoluteExpiry(t *testing.T) {
	env := newTkEnv(t, func(c *Config) { c.RefreshIdle = 30 * 24 * time.Hour; c.RefreshMax = 40 * 24 * time.Hour })
	rt := env.exchange().RefreshToken
	env.advance(29 * 24 * time.Hour)
	rt = env.mustTokens(env.do(env.refreshReq("conf", env.secretA, rt))).RefreshToken
	env.advance(11*24*time.Hour - time.Second)
	rt = env.mustTokens(env.do(env.refreshReq("conf", env.secretA, rt))).RefreshToken
	env.advance(time.Second)
	if got := tkOAuthErr(t, env.do(env.refreshReq("conf", env.secretA, rt))); got != "invalid_grant" {
		t.Errorf("after absolute expiry: error = %q; want invalid_grant", got)
	}
}

func TestTokenScopeNarrowing(t *testing.T) {
	env := newTkEnv(t)
	rt := env.exchange().RefreshToken
	tok := env.mustTokens(env.do(env.refreshReq("conf", env.secretA, rt, "scope", "BOOKING_READ")))
	if tok.Scope != "BOOKING_READ" {
		t.Errorf("narrowed scope = %q", tok.Scope)
	}
	tkCheckJWT(t, env, tok.AccessToken, "conf", "BOOKING_READ", false)
	// The family keeps its scopes.
	tok = env.mustTokens(env.do(env.refreshReq("conf", env.secretA, tok.RefreshToken)))
	if tok.Scope != "PROFILE_READ BOOKING_READ" {
		t.Errorf("scope after narrowing = %q; want the family's", tok.Scope)
	}
	// A refused widening writes nothing: the token still works.
	if got := tkOAuthErr(t, env.do(env.refreshReq("conf", env.secretA, tok.RefreshToken, "scope", "EVENT_TYPE_READ"))); got != "invalid_scope" {
		t.Fatalf("widening: error = %q", got)
	}
	env.mustTokens(env.do(env.refreshReq("conf", env.secretA, tok.RefreshToken)))
}

func TestTokenSecretRotation(t *testing.T) {
	env := newTkEnv(t)
	rt := env.exchange().RefreshToken // with secret A
	rt = env.mustTokens(env.do(env.refreshReq("conf", env.secretB, rt))).RefreshToken
	_, err := env.store.UpdateClient(context.Background(), "conf", func(c data.Client) (data.Client, error) {
		c.Secrets = slices.DeleteFunc(c.Secrets, func(s data.ClientSecret) bool { return s.ID == "cs_a" })
		return c, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := tkOAuthErr(t, env.do(env.refreshReq("conf", env.secretA, rt))); got != "invalid_client" {
		t.Errorf("revoked secret: error = %q; want invalid_client", got)
	}
	env.mustTokens(env.do(env.refreshReq("conf", env.secretB, rt)))
	c, _ := env.store.GetClient(context.Background(), "conf")
	if !c.Secrets[0].LastUsedAt.Equal(env.clock()) {
		t.Errorf("LastUsedAt = %v; want %v", c.Secrets[0].LastUsedAt, env.clock())
	}
}

func TestTokenRejectedClientRefreshFails(t *testing.T) {
	env := newTkEnv(t)
	rt := env.exchange().RefreshToken
	_, err := env.store.UpdateClient(context.Background(), "conf", func(c data.Client) (data.Client, error) {
		c.Status, c.RejectReason = data.StatusRejected, "abuse"
		return c, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := env.do(env.refreshReq("conf", env.secretA, rt))
	if rec.Code != http.StatusUnauthorized || tkOAuthErr(t, rec) != "invalid_client" {
		t.Errorf("rejected client refresh: %d %s", rec.Code, rec.Body)
	}
}

// TestTokenFailureLimit: failed client authentications are counted per
// (client ID, source address) and per address. Once (client, address) is
// limited, every authentication for it gets 429 (the right secret too,
// else the limit would still answer the guess), until the budget refills
// by itself; the same client from another address is never limited by it.
func TestTokenFailureLimit(t *testing.T) {
	env := newTkEnv(t)
	burst := tokenLimits[throttle.Client].Burst
	bad := func(remote string) tkReq {
		r := env.refreshReq("conf", "oauthd_cs_wrong", "x")
		r.remote = remote
		return r
	}
	for i := range burst {
		if rec := env.do(bad("192.0.2.1:1000")); rec.Code != http.StatusUnauthorized {
			t.Fatalf("failure %d: status %d; want 401", i+1, rec.Code)
		}
	}
	rec := env.do(bad("192.0.2.1:1000"))
	if rec.Code != http.StatusTooManyRequests || tkOAuthErr(t, rec) != "too_many_requests" {
		t.Fatalf("after %d failures: %d %s; want 429 too_many_requests", burst, rec.Code, rec.Body)
	}
	if ra := rec.Header().Get("Retry-After"); ra != "6" {
		t.Errorf("Retry-After = %q; want 6 (10 per minute)", ra)
	}
	// From the flooding address, even the right secret waits.
	rt := env.refreshReq("conf", env.secretA, "x")
	rt.remote = "192.0.2.1:1"
	if rec := env.do(rt); rec.Code != http.StatusTooManyRequests {
		t.Errorf("limited (client, address), right secret: %d; want 429", rec.Code)
	}
	// From another address the client authenticates: client IDs are
	// public, a flood must not lock the holder of the secret out.
	rt.remote = "198.51.100.9:1"
	if got := tkOAuthErr(t, env.do(rt)); got != "invalid_grant" {
		t.Errorf("right secret from another address: error %q; want invalid_grant (authenticated)", got)
	}
	// Other clients from the flooding address still have the address's
	// budget; spraying client IDs hits the address ceiling.
	ro := env.refreshReq("other", env.otherSecret, "x")
	ro.remote = "192.0.2.1:2000"
	if got := tkOAuthErr(t, env.do(ro)); got != "invalid_grant" {
		t.Errorf("other client from the flooding address: error %q; want invalid_grant", got)
	}
	ceiling := tokenLimits[throttle.Addr].Burst
	for i := range ceiling - burst {
		r := env.refreshReq(fmt.Sprintf("sprayed-%d", i), "oauthd_cs_wrong", "x")
		r.remote = "192.0.2.1:3000"
		env.do(r)
	}
	if rec := env.do(ro); rec.Code != http.StatusTooManyRequests {
		t.Errorf("address past its ceiling, other client: %d; want 429", rec.Code)
	}
	// No permanent lockout: after one refill interval the right secret works.
	env.advance(6 * time.Second)
	env.mustTokens(env.do(env.refreshReq("conf", env.secretA, env.exchange().RefreshToken)))
	// Successes are never counted.
	env.advance(time.Minute)
	for range 3 * burst {
		if got := tkOAuthErr(t, env.do(env.refreshReq("conf", env.secretA, "oauthd_rt_x"))); got != "invalid_grant" {
			t.Fatalf("successful authentication throttled: %q", got)
		}
	}
}

func TestRevoke(t *testing.T) {
	revokeReq := func(client, secret, token string, extra ...string) tkReq {
		return tkReq{path: "/v2/auth/oauth2/revoke", body: tkForm(append([]string{"token", token, "client_id", client, "client_secret", secret}, extra...)...)}
	}
	t.Run("own refresh token revokes the family", func(t *testing.T) {
		env := newTkEnv(t)
		tok := env.exchange()
		rec := env.do(revokeReq("conf", env.secretA, tok.RefreshToken, "token_type_hint", "something_else"))
		if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-store" {
			t.Fatalf("revoke: %d %v", rec.Code, rec.Header())
		}
		if got := tkOAuthErr(t, env.do(env.refreshReq("conf", env.secretA, tok.RefreshToken))); got != "invalid_grant" {
			t.Errorf("refresh after revoke: %q", got)
		}
		if !strings.Contains(env.logs.String(), `"event":"token_revoked"`) {
			t.Errorf("no token_revoked audit record")
		}
	})
	t.Run("another client's token is not revoked", func(t *testing.T) {
		env := newTkEnv(t)
		tok := env.exchange()
		if rec := env.do(revokeReq("other", env.otherSecret, tok.RefreshToken)); rec.Code != http.StatusOK {
			t.Fatalf("status %d", rec.Code)
		}
		env.mustTokens(env.do(env.refreshReq("conf", env.secretA, tok.RefreshToken)))
	})
	t.Run("a rotated-away token is not reuse here", func(t *testing.T) {
		env := newTkEnv(t)
		r1 := env.exchange().RefreshToken
		r2 := env.mustTokens(env.do(env.refreshReq("conf", env.secretA, r1))).RefreshToken
		if rec := env.do(revokeReq("conf", env.secretA, r1)); rec.Code != http.StatusOK {
			t.Fatalf("status %d", rec.Code)
		}
		env.mustTokens(env.do(env.refreshReq("conf", env.secretA, r2)))
	})
	t.Run("unknown token", func(t *testing.T) {
		env := newTkEnv(t)
		for _, tok := range []string{"garbage", data.NewRefreshToken(data.NewFamilyID(time.Now()), 0, env.s.refreshKey)} {
			if rec := env.do(revokeReq("conf", env.secretA, tok)); rec.Code != http.StatusOK {
				t.Errorf("revoke %q: %d; want 200", tok, rec.Code)
			}
		}
	})
	t.Run("access token revokes its grant", func(t *testing.T) {
		for _, hint := range []string{"access_token", "", "refresh_token"} {
			env := newTkEnv(t)
			tok := env.exchange()
			extra := []string{}
			if hint != "" {
				extra = []string{"token_type_hint", hint}
			}
			// Another client's revocation of it changes nothing.
			if rec := env.do(revokeReq("other", env.otherSecret, tok.AccessToken, extra...)); rec.Code != http.StatusOK {
				t.Fatalf("hint %q: another client's revocation: %d %s", hint, rec.Code, rec.Body)
			}
			env.mustTokens(env.do(env.refreshReq("conf", env.secretA, tok.RefreshToken)))
			tok2 := env.exchange()
			rec := env.do(revokeReq("conf", env.secretA, tok2.AccessToken, extra...))
			if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-store" {
				t.Fatalf("hint %q: revoke access token: %d %s", hint, rec.Code, rec.Body)
			}
			if got := tkOAuthErr(t, env.do(env.refreshReq("conf", env.secretA, tok2.RefreshToken))); got != "invalid_grant" {
				t.Errorf("hint %q: refresh after revoking the access token: %q; want invalid_grant", hint, got)
			}
		}
	})
	t.Run("access token without grant_id", func(t *testing.T) {
		env := newTkEnv(t)
		old, err := env.s.mintAccessToken(t.Context(), env.clock(), "", tkUser, "conf", []string{"PROFILE_READ"}, false, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		rec := env.do(revokeReq("conf", env.secretA, old, "token_type_hint", "access_token"))
		if rec.Code != 400 || tkOAuthErr(t, rec) != "unsupported_token_type" {
			t.Errorf("revoke an access token without grant_id: %d %s; want 400 unsupported_token_type", rec.Code, rec.Body)
		}
		for _, bad := range []string{"eyJhbGciOiJub25lIn0.e30.", "eyJ.x.y"} {
			if rec := env.do(revokeReq("conf", env.secretA, bad)); rec.Code != http.StatusOK {
				t.Errorf("revoke invalid JWT %q: %d; want 200", bad, rec.Code)
			}
		}
	})
	t.Run("errors", func(t *testing.T) {
		env := newTkEnv(t)
		if rec := env.do(revokeReq("conf", env.secretA, "")); rec.Code != 400 || tkOAuthErr(t, rec) != "invalid_request" {
			t.Errorf("missing token: %d %s", rec.Code, rec.Body)
		}
		if rec := env.do(revokeReq("conf", env.secretB+"x", "t")); rec.Code != 401 || tkOAuthErr(t, rec) != "invalid_client" {
			t.Errorf("bad secret: %d %s", rec.Code, rec.Body)
		}
		r := revokeReq("conf", env.secretA, "t")
		r.ct = "text/plain"
		if rec := env.do(r); rec.Code != 400 {
			t.Errorf("text/plain: %d", rec.Code)
		}
	})
}

func TestIntrospect(t *testing.T) {
	env := newTkEnv(t)
	tok := env.exchange()
	introspect := func(client, secret, token string) map[string]any {
		t.Helper()
		rec := env.do(tkReq{path: "/v2/auth/oauth2/introspect", body: tkForm("token", token), header: [][2]string{tkBasic(client, secret)}})
		if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-store" {
			t.Fatalf("introspect: %d %v %s", rec.Code, rec.Header(), rec.Body)
		}
		var m map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	inactive := map[string]any{"active": false}
	now := float64(env.clock().Unix())
	tests := []struct {
		name   string
		client string
		secret string
		token  string
		want   map[string]any
	}{
		{"own access token", "conf", env.secretA, tok.AccessToken, nil},
		{"own refresh token", "conf", env.secretB, tok.RefreshToken, map[string]any{
			"active": true, "scope": "PROFILE_READ BOOKING_READ", "client_id": "conf", "sub": "7",
			"exp": now + 30*24*3600, "iat": now, "token_type": "refresh_token"}},
		{"another client's access token", "other", env.otherSecret, tok.AccessToken, inactive},
		{"another client's refresh token", "other", env.otherSecret, tok.RefreshToken, inactive},
		{"garbage", "conf", env.secretA, "eyJ.x.y", inactive},
		{"unknown refresh token", "conf", env.secretA, data.NewRefreshToken(data.NewFamilyID(time.Now()), 0, env.s.refreshKey), inactive},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := introspect(tc.client, tc.secret, tc.token)
			if tc.want == nil { // access token: check fields
				jti, _ := got["jti"].(string)
				if got["active"] != true || got["scope"] != "PROFILE_READ BOOKING_READ" || got["client_id"] != "conf" ||
					got["sub"] != "7" || got["exp"] != now+1800 || got["iat"] != now || got["iss"] != tkIssuer ||
					got["aud"] != tkIssuer || jti == "" || got["token_type"] != "Bearer" {
					t.Errorf("introspection = %v", got)
				}
				return
			}
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(tc.want)
			if string(gb) != string(wb) {
				t.Errorf("introspection = %s; want %s", gb, wb)
			}
		})
	}
	t.Run("expired and rotated", func(t *testing.T) {
		env.advance(1800*time.Second + 61*time.Second)
		if got := introspect("conf", env.secretA, tok.AccessToken); got["active"] != false {
			t.Errorf("expired access token: %v", got)
		}
		env.mustTokens(env.do(env.refreshReq("conf", env.secretA, tok.RefreshToken)))
		if got := introspect("conf", env.secretA, tok.RefreshToken); got["active"] != false {
			t.Errorf("rotated refresh token: %v", got)
		}
	})
	t.Run("unauthenticated", func(t *testing.T) {
		rec := env.do(tkReq{path: "/v2/auth/oauth2/introspect", body: tkForm("token", tok.AccessToken)})
		if rec.Code != 401 || tkOAuthErr(t, rec) != "invalid_client" {
			t.Errorf("unauthenticated: %d %s", rec.Code, rec.Body)
		}
	})
}

func TestIntrospectLegacy(t *testing.T) {
	env := newTkEnv(t)
	code := env.code(tkCodeOpts{client: "legacy", unrestricted: true})
	tok := env.mustTokens(env.do(tkReq{body: tkForm("grant_type", "authorization_code", "code", code, "redirect_uri", tkRedirect, "client_id", "legacy", "client_secret", env.legacySecret)}))
	for _, token := range []string{tok.AccessToken, tok.RefreshToken} {
		rec := env.do(tkReq{path: "/v2/auth/oauth2/introspect", body: tkForm("token", token, "client_id", "legacy", "client_secret", env.legacySecret)})
		var m map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		if _, hasScope := m["scope"]; m["active"] != true || m["unrestricted"] != true || hasScope {
			t.Errorf("legacy introspection = %v", m)
		}
	}
}

func TestMetadata(t *testing.T) {
	env := newTkEnv(t)
	rec := env.do(tkReq{method: http.MethodGet, path: "/.well-known/oauth-authorization-server"})
	if rec.Code != 200 || rec.Header().Get("Cache-Control") != "public, max-age=3600" {
		t.Fatalf("metadata: %d %v", rec.Code, rec.Header())
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"issuer":                                                   tkIssuer,
		"authorization_endpoint":                                   "https://app.example.com/auth/oauth2/authorize",
		"token_endpoint":                                           tkIssuer + "/v2/auth/oauth2/token",
		"revocation_endpoint":                                      tkIssuer + "/v2/auth/oauth2/revoke",
		"introspection_endpoint":                                   tkIssuer + "/v2/auth/oauth2/introspect",
		"jwks_uri":                                                 tkIssuer + "/.well-known/jwks.json",
		"response_types_supported":                                 []any{"code"},
		"response_modes_supported":                                 []any{"query"},
		"grant_types_supported":                                    []any{"authorization_code", "refresh_token", "client_credentials", "urn:ietf:params:oauth:grant-type:device_code"},
		"token_endpoint_auth_methods_supported":                    []any{"client_secret_basic", "client_secret_post", "private_key_jwt", "none"},
		"revocation_endpoint_auth_methods_supported":               []any{"client_secret_basic", "client_secret_post", "private_key_jwt", "none"},
		"introspection_endpoint_auth_methods_supported":            []any{"client_secret_basic", "client_secret_post", "private_key_jwt"},
		"token_endpoint_auth_signing_alg_values_supported":         []any{"RS256", "PS256", "ES256", "ES384", "EdDSA"},
		"revocation_endpoint_auth_signing_alg_values_supported":    []any{"RS256", "PS256", "ES256", "ES384", "EdDSA"},
		"introspection_endpoint_auth_signing_alg_values_supported": []any{"RS256", "PS256", "ES256", "ES384", "EdDSA"},
		"code_challenge_methods_supported":                         []any{"S256"},
		"authorization_response_iss_parameter_supported":           true,
		"pushed_authorization_request_endpoint":                    tkIssuer + "/v2/auth/oauth2/par",
		"device_authorization_endpoint":                            tkIssuer + "/v2/auth/oauth2/device_authorization",
		"require_pushed_authorization_requests":                    false,
		"dpop_signing_alg_values_supported":                        []any{"ES256", "EdDSA", "Ed25519"},
		// OpenID Connect Discovery 1.0 §3.
		"userinfo_endpoint":                     tkIssuer + "/v2/auth/oauth2/userinfo",
		"end_session_endpoint":                  "https://app.example.com/auth/logout",
		"id_token_signing_alg_values_supported": []any{"ES256", "EdDSA", "RS256"},
		"subject_types_supported":               []any{"public"},
		"claims_supported": []any{"iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "azp",
			"name", "preferred_username", "zoneinfo", "updated_at", "email", "email_verified"},
		"prompt_values_supported":         []any{"none", "login", "consent", "select_account"},
		"claims_parameter_supported":      false,
		"request_parameter_supported":     false,
		"request_uri_parameter_supported": false,
		// draft-ietf-oauth-client-id-metadata-document (clientmeta.go).
		"client_id_metadata_document_supported": true,
	}
	for k, v := range want {
		gb, _ := json.Marshal(m[k])
		wb, _ := json.Marshal(v)
		if string(gb) != string(wb) {
			t.Errorf("%s = %s; want %s", k, gb, wb)
		}
	}
	scopes, _ := m["scopes_supported"].([]any)
	if len(scopes) != 33 || scopes[0] != "openid" || scopes[1] != "profile" || scopes[2] != "email" || scopes[32] != "ORG_MEMBERSHIP_WRITE" {
		t.Errorf("scopes_supported = %v", scopes)
	}
	if len(m) != len(want)+1 {
		t.Errorf("metadata has %d members; want %d", len(m), len(want)+1)
	}
}

func TestHTTPErrorHandler(t *testing.T) {
	env := newTkEnv(t)
	env.e.GET("/boom", func(c echo.Context) error { return errors.New("database exploded at /secret/path") })
	env.e.GET("/too-big", func(c echo.Context) error { return echo.ErrStatusRequestEntityTooLarge })
	env.e.GET("/oauth", func(c echo.Context) error { return WithDescription(ErrInvalidScope, "nope") })
	tests := []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/nowhere", 404, "not_found"},
		{"GET", "/v2/auth/oauth2/token", 405, "method_not_allowed"},
		{"GET", "/boom", 500, "server_error"},
		{"GET", "/too-big", 413, "invalid_request"},
		{"GET", "/oauth", 400, "invalid_scope"},
	}
	for _, tc := range tests {
		rec := env.do(tkReq{method: tc.method, path: tc.path})
		if rec.Code != tc.status || tkOAuthErr(t, rec) != tc.code {
			t.Errorf("%s %s: %d %s; want %d %s", tc.method, tc.path, rec.Code, rec.Body, tc.status, tc.code)
		}
		if strings.Contains(rec.Body.String(), "exploded") {
			t.Errorf("server error leaked: %s", rec.Body)
		}
	}
	if !strings.Contains(env.logs.String(), "database exploded") {
		t.Errorf("server error not logged")
	}
}

func TestErrorIs(t *testing.T) {
	e := WithDescription(ErrInvalidGrant, "code %s expired", "x")
	if !errors.Is(e, ErrInvalidGrant) || errors.Is(e, ErrInvalidRequest) {
		t.Errorf("errors.Is by code broken")
	}
	if e.Error() != "invalid_grant: code x expired" || ErrInvalidGrant.Description != "" {
		t.Errorf("WithDescription modified the sentinel or Error() = %q", e.Error())
	}
	var _ jwt.Claims = &accessClaims{}
}

// tkCounter reads a counter's value.
func tkCounter(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestTokenBodyLimitMiddleware: with serve's BodyLimit middleware in front,
// an oversized body is a 413 JSON invalid_request whether or not it
// declares its length.
func TestTokenBodyLimitMiddleware(t *testing.T) {
	env := newTkEnv(t)
	env.e.Use(middleware.BodyLimit(MaxBody))
	body := "grant_type=refresh_token&x=" + strings.Repeat("a", 64<<10)
	for _, chunked := range []bool{false, true} {
		req := httptest.NewRequest(http.MethodPost, "/v2/auth/oauth2/token", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if chunked {
			req.ContentLength = -1
		}
		rec := httptest.NewRecorder()
		env.e.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge || tkOAuthErr(t, rec) != "invalid_request" {
			t.Errorf("chunked=%v: %d %s; want 413 invalid_request", chunked, rec.Code, rec.Body)
		}
	}
}
