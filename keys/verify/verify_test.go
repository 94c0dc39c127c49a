package verify_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"oauthd/keys/keystest"
	"oauthd/keys/verify"
)

const issuer = "https://oauthd.test"

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: t0} }
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testKey is a signing key of the test issuer.
type testKey struct {
	kid  string
	alg  string
	priv crypto.Signer
}

func (k testKey) pub() crypto.PublicKey { return k.priv.Public() }

var (
	keyOnce sync.Once
	keyES   testKey
	keyEd   testKey
	keyRS   testKey
)

// fixedKeys generates the three test keys once (RSA generation is slow).
func fixedKeys(t testing.TB) (es, ed, rs testKey) {
	t.Helper()
	keyOnce.Do(func() {
		e, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		_, d, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		r, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		keyES = testKey{"kid-es", verify.ES256, e}
		keyEd = testKey{"kid-ed", verify.EdDSA, d}
		keyRS = testKey{"kid-rs", verify.RS256, r}
	})
	return keyES, keyEd, keyRS
}

// staticKeys is a KeySource over a fixed set of keys.
type staticKeys map[string]testKey

func (s staticKeys) Key(_ context.Context, kid string) (crypto.PublicKey, string, error) {
	k, ok := s[kid]
	if !ok {
		return nil, "", fmt.Errorf("kid %q: %w", kid, verify.ErrUnknownKey)
	}
	return k.pub(), k.alg, nil
}

func validClaims(now time.Time) jwt.MapClaims {
	return jwt.MapClaims{
		"iss":       issuer,
		"sub":       "42",
		"aud":       issuer,
		"iat":       now.Unix(),
		"exp":       now.Add(30 * time.Minute).Unix(),
		"jti":       "jti-1",
		"client_id": "client-1",
		"scope":     "BOOKING_READ PROFILE_READ",
	}
}

// mint signs claims with k under method (default: k's alg), header typ
// at+jwt and kid k.kid, then applies hdr overrides (nil value deletes).
func mint(t testing.TB, k testKey, claims jwt.MapClaims, hdr map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(k.alg), claims)
	tok.Header["kid"] = k.kid
	tok.Header["typ"] = "at+jwt"
	for h, v := range hdr {
		if v == nil {
			delete(tok.Header, h)
		} else {
			tok.Header[h] = v
		}
	}
	s, err := tok.SignedString(k.priv)
	if err != nil {
		t.Fatal(err)
	}
	return keystest.LowS(s)
}

func with(c jwt.MapClaims, kv ...any) jwt.MapClaims {
	out := jwt.MapClaims{}
	for k, v := range c {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

func b64(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestVerify(t *testing.T) {
	es, ed, rs := fixedKeys(t)
	c := newClock()
	now := c.Now()
	v, err := verify.New(verify.Config{Issuer: issuer, Keys: staticKeys{es.kid: es, ed.kid: ed, rs.kid: rs}, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	good := validClaims(now)
	otherTok := mint(t, es, with(good, "scope", "ORG_BOOKING_WRITE"), nil)

	// HS256 "signed" with the ES256 public key's bytes, kid of the ES256 key.
	der, _ := x509.MarshalPKIXPublicKey(es.pub())
	hsTok := jwt.NewWithClaims(jwt.SigningMethodHS256, good)
	hsTok.Header["kid"], hsTok.Header["typ"] = es.kid, "at+jwt"
	hs, _ := hsTok.SignedString(der)
	// RS256 token whose kid names the ES256 key.
	rsAsES := mint(t, testKey{es.kid, verify.RS256, rs.priv}, good, nil)
	// EdDSA token whose kid names the RS256 key.
	edAsRS := mint(t, testKey{rs.kid, verify.EdDSA, ed.priv}, good, nil)
	// alg none.
	none := b64(map[string]string{"alg": "none", "typ": "at+jwt", "kid": es.kid}) + "." + b64(good) + "."
	// Payload swapped under a valid signature.
	valid := mint(t, es, good, nil)
	p := strings.Split(valid, ".")
	tampered := p[0] + "." + strings.Split(otherTok, ".")[1] + "." + p[2]
	// Signature of another token.
	swappedSig := p[0] + "." + p[1] + "." + strings.Split(otherTok, ".")[2]

	tests := []struct {
		name        string
		token       string
		wantErr     string // substring of the error; "" = valid
		wantUnknown bool
		check       func(t *testing.T, c *verify.Claims)
	}{
		{name: "valid ES256", token: valid, check: func(t *testing.T, c *verify.Claims) {
			if c.Issuer != issuer || c.Subject != "42" || c.ClientID != "client-1" || c.ID != "jti-1" ||
				len(c.Audience) != 1 || c.Audience[0] != issuer || !c.ExpiresAt.Equal(now.Add(30*time.Minute)) || !c.IssuedAt.Equal(now) {
				t.Errorf("claims = %+v", c)
			}
		}},
		{name: "valid EdDSA", token: mint(t, ed, good, nil)},
		{name: "valid RS256", token: mint(t, rs, good, nil)},
		{name: "expired", token: mint(t, es, with(good, "exp", now.Add(-2*time.Minute).Unix()), nil), wantErr: "expired"},
		{name: "expired within leeway", token: mint(t, es, with(good, "exp", now.Add(-30*time.Second).Unix()), nil)},
		{name: "no exp", token: mint(t, es, with(good, "exp", nil), nil), wantErr: "missing"},
		{name: "not yet valid", token: mint(t, es, with(good, "nbf", now.Add(2*time.Minute).Unix()), nil), wantErr: "not valid yet"},
		{name: "nbf within leeway", token: mint(t, es, with(good, "nbf", now.Add(30*time.Second).Unix()), nil)},
		{name: "iat in the future", token: mint(t, es, with(good, "iat", now.Add(2*time.Minute).Unix()), nil), wantErr: "future"},
		{name: "iat within leeway", token: mint(t, es, with(good, "iat", now.Add(30*time.Second).Unix()), nil)},
		{name: "wrong iss", token: mint(t, es, with(good, "iss", "https://evil.test"), nil), wantErr: "issuer"},
		{name: "no iss", token: mint(t, es, with(good, "iss", nil), nil), wantErr: "invalid token"},
		{name: "wrong aud", token: mint(t, es, with(good, "aud", "https://other.test"), nil), wantErr: "audience"},
		{name: "no aud", token: mint(t, es, with(good, "aud", nil), nil), wantErr: "invalid token"},
		{name: "aud list containing ours", token: mint(t, es, with(good, "aud", []string{"https://other.test", issuer}), nil)},
		{name: "wrong typ", token: mint(t, es, good, map[string]any{"typ": "JWT"}), wantErr: "typ"},
		{name: "missing typ", token: mint(t, es, good, map[string]any{"typ": nil}), wantErr: "typ"},
		{name: "typ application/at+jwt", token: mint(t, es, good, map[string]any{"typ": "application/at+jwt"})},
		{name: "typ upper case", token: mint(t, es, good, map[string]any{"typ": "AT+JWT"})},
		{name: "no kid", token: mint(t, es, good, map[string]any{"kid": nil}), wantErr: "kid"},
		{name: "unknown kid", token: mint(t, testKey{"kid-gone", verify.ES256, es.priv}, good, nil), wantErr: "unknown kid", wantUnknown: true},
		{name: "tampered payload", token: tampered, wantErr: "signature"},
		{name: "signature of another token", token: swappedSig, wantErr: "signature"},
		{name: "alg none", token: none, wantErr: "invalid token"},
		{name: "HS256 with the public key bytes", token: hs, wantErr: "invalid token"},
		{name: "RS256 token for an ES256 key", token: rsAsES, wantErr: "does not match"},
		{name: "EdDSA token for an RS256 key", token: edAsRS, wantErr: "does not match"},
		{name: "garbage", token: "not.a.jwt", wantErr: "malformed"},
		{name: "trailing newline", token: valid + "\n", wantErr: "malformed"},
		{name: "padded signature", token: valid + "==", wantErr: "malformed"},
		{name: "oversized", token: mint(t, es, good, map[string]any{"pad": strings.Repeat("A", verify.MaxTokenSize)}), wantErr: "longer than"},
		{name: "empty", token: "", wantErr: "malformed"},
		{name: "unrestricted true", token: mint(t, es, with(good, "scope", nil, "unrestricted", true), nil), check: func(t *testing.T, c *verify.Claims) {
			if !c.Unrestricted || len(c.Scopes) != 0 {
				t.Errorf("Unrestricted, Scopes = %v, %v; want true, none", c.Unrestricted, c.Scopes)
			}
		}},
		{name: "unrestricted string true", token: mint(t, es, with(good, "unrestricted", "true"), nil), check: wantRestricted},
		{name: "unrestricted 1", token: mint(t, es, with(good, "unrestricted", 1), nil), check: wantRestricted},
		{name: "unrestricted false", token: mint(t, es, with(good, "unrestricted", false), nil), check: wantRestricted},
		{name: "no scope is not unrestricted", token: mint(t, es, with(good, "scope", nil), nil), check: func(t *testing.T, c *verify.Claims) {
			if c.Unrestricted || len(c.Scopes) != 0 {
				t.Errorf("Unrestricted, Scopes = %v, %v; want false, none", c.Unrestricted, c.Scopes)
			}
		}},
		{name: "scope with extra spaces", token: mint(t, es, with(good, "scope", " BOOKING_READ   PROFILE_READ "), nil), check: func(t *testing.T, c *verify.Claims) {
			if strings.Join(c.Scopes, ",") != "BOOKING_READ,PROFILE_READ" {
				t.Errorf("Scopes = %q", c.Scopes)
			}
		}},
		{name: "scope not a string", token: mint(t, es, with(good, "scope", []string{"BOOKING_READ"}), nil), wantErr: "malformed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := v.Verify(t.Context(), tc.token)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Verify = %v; want success", err)
				}
				if tc.check != nil {
					tc.check(t, got)
				}
				return
			}
			if err == nil {
				t.Fatalf("Verify succeeded; want error %q", tc.wantErr)
			}
			if !errors.Is(err, verify.ErrInvalidToken) {
				t.Errorf("Verify = %v; does not wrap ErrInvalidToken", err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Verify = %q; want it to mention %q", err, tc.wantErr)
			}
			if errors.Is(err, verify.ErrUnknownKey) != tc.wantUnknown {
				t.Errorf("errors.Is(%v, ErrUnknownKey) = %v; want %v", err, !tc.wantUnknown, tc.wantUnknown)
			}
			if got != nil {
				t.Errorf("claims returned with an error")
			}
			if tc.token != "" && strings.Contains(err.Error(), tc.token) {
				t.Errorf("error contains the token")
			}
		})
	}
}

func wantRestricted(t *testing.T, c *verify.Claims) {
	if c.Unrestricted {
		t.Errorf("Unrestricted = true; want false (only the literal true grants it)")
	}
}

func TestVerifyAudienceDefaultAndCustom(t *testing.T) {
	es, _, _ := fixedKeys(t)
	c := newClock()
	ks := staticKeys{es.kid: es}
	tok := mint(t, es, with(validClaims(c.Now()), "aud", "https://api.test"), nil)
	tests := []struct {
		name, aud string
		ok        bool
	}{
		{"default audience is the issuer", "", false},
		{"custom audience", "https://api.test", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := verify.New(verify.Config{Issuer: issuer, Audience: tc.aud, Keys: ks, Now: c.Now})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := v.Verify(t.Context(), tok); (err == nil) != tc.ok {
				t.Errorf("Verify = %v; want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestNewConfig(t *testing.T) {
	es, _, _ := fixedKeys(t)
	if _, err := verify.New(verify.Config{Keys: staticKeys{}}); err == nil {
		t.Error("New without Issuer succeeded")
	}
	if _, err := verify.New(verify.Config{Issuer: issuer}); err == nil {
		t.Error("New without Keys succeeded")
	}
	// Negative leeway: none at all.
	c := newClock()
	v, _ := verify.New(verify.Config{Issuer: issuer, Keys: staticKeys{es.kid: es}, Now: c.Now, Leeway: -1})
	tok := mint(t, es, with(validClaims(c.Now()), "exp", c.Now().Add(-time.Second).Unix()), nil)
	if _, err := v.Verify(t.Context(), tok); err == nil {
		t.Error("expired token accepted with no leeway")
	}
}
