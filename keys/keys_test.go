package keys_test

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"oauthd/data"
	"oauthd/data/memory"
	"oauthd/keys"
	"oauthd/keys/verify"
)

const issuer = "https://oauthd.test"

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time         { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration)    { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }
func newClock() *clock                  { return &clock{t: t0} }
func discard() *slog.Logger             { return slog.New(slog.DiscardHandler) }
func newStore() *countingStore          { return &countingStore{Store: memory.New()} }
func ctxT(t *testing.T) context.Context { return t.Context() }

// countingStore counts UpdateKeys transactions.
type countingStore struct {
	*memory.Store
	updates atomic.Int32
}

func (s *countingStore) UpdateKeys(ctx context.Context, f func([]data.SigningKey) ([]data.SigningKey, error)) ([]data.SigningKey, error) {
	s.updates.Add(1)
	return s.Store.UpdateKeys(ctx, f)
}

func newManager(t *testing.T, st keys.Store, c *clock, mod func(*keys.Config)) *keys.Manager {
	t.Helper()
	cfg := keys.Config{Store: st, Logger: discard(), Now: c.Now}
	if mod != nil {
		mod(&cfg)
	}
	m, err := keys.New(ctxT(t), cfg)
	if err != nil {
		t.Fatalf("keys.New: %v", err)
	}
	return m
}

type testClaims struct {
	jwt.RegisteredClaims
	ClientID     string `json:"client_id,omitempty"`
	Scope        string `json:"scope,omitempty"`
	Unrestricted bool   `json:"unrestricted,omitempty"`
}

func claimsAt(now time.Time) testClaims {
	return testClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    issuer,
			Subject:   "42",
			Audience:  jwt.ClaimStrings{issuer},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(30 * time.Minute)),
			ID:        "jti-1",
		},
		ClientID: "client-1",
		Scope:    "BOOKING_READ PROFILE_READ",
	}
}

func newVerifier(t *testing.T, ks verify.KeySource, c *clock) *verify.Verifier {
	t.Helper()
	v, err := verify.New(verify.Config{Issuer: issuer, Keys: ks, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// states returns the stored keys' states by kid and counts per state.
func states(t *testing.T, st keys.Store) (map[string]data.KeyState, map[data.KeyState]int) {
	t.Helper()
	ks, err := st.ListKeys(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]data.KeyState{}
	n := map[data.KeyState]int{}
	for _, k := range ks {
		by[k.KID] = k.State
		n[k.State]++
	}
	return by, n
}

// jwksKIDs parses a JWKS and returns its kids, checking each key's members.
func jwksKIDs(t *testing.T, b []byte) map[string]string {
	t.Helper()
	set, err := jwk.Parse(b)
	if err != nil {
		t.Fatalf("jwk.Parse(JWKS): %v", err)
	}
	out := map[string]string{}
	for i := range set.Len() {
		k, _ := set.Key(i)
		if k.KeyUsage() != "sig" {
			t.Errorf("key %s: use = %q; want sig", k.KeyID(), k.KeyUsage())
		}
		tp, err := k.Thumbprint(crypto.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		if got := base64.RawURLEncoding.EncodeToString(tp); got != k.KeyID() {
			t.Errorf("kid %s is not the RFC 7638 thumbprint %s", k.KeyID(), got)
		}
		var raw any
		if err := k.Raw(&raw); err != nil {
			t.Fatal(err)
		}
		if _, private := raw.(crypto.Signer); private {
			t.Errorf("JWKS key %s carries private material", k.KeyID())
		}
		out[k.KeyID()] = k.Algorithm().String()
	}
	return out
}

func kidOf(k []keys.Info, state data.KeyState) string {
	for _, i := range k {
		if i.State == state {
			return i.KID
		}
	}
	return ""
}

func TestNewCreatesActiveAndNext(t *testing.T) {
	for _, alg := range []string{"", "ES256", "EdDSA", "RS256"} {
		t.Run("alg="+alg, func(t *testing.T) {
			st, c := newStore(), newClock()
			m := newManager(t, st, c, func(cfg *keys.Config) { cfg.Alg = alg })
			want := alg
			if want == "" {
				want = "ES256"
			}
			list, err := m.List(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 2 || list[0].State != data.KeyNext || list[1].State != data.KeyActive {
				t.Fatalf("List = %+v; want [next active]", list)
			}
			for _, i := range list {
				if i.Alg != want {
					t.Errorf("key %s alg = %q; want %q", i.KID, i.Alg, want)
				}
				if !i.CreatedAt.Equal(t0) {
					t.Errorf("key %s CreatedAt = %v; want %v", i.KID, i.CreatedAt, t0)
				}
			}
			if !list[1].ActivatedAt.Equal(t0) || !list[0].ActivatedAt.IsZero() {
				t.Errorf("ActivatedAt: active %v, next %v; want %v, zero", list[1].ActivatedAt, list[0].ActivatedAt, t0)
			}
			got := jwksKIDs(t, m.JWKS())
			if len(got) != 2 || got[list[0].KID] != want || got[list[1].KID] != want {
				t.Errorf("JWKS kids = %v; want both keys with alg %s", got, want)
			}
			// A second start on the same store creates nothing.
			before := st.updates.Load()
			m2 := newManager(t, st, c, func(cfg *keys.Config) { cfg.Alg = alg })
			if n := st.updates.Load() - before; n != 0 {
				t.Errorf("second New wrote %d times; want 0", n)
			}
			if !bytes.Equal(m2.JWKS(), m.JWKS()) {
				t.Errorf("second manager's JWKS differs")
			}
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  keys.Config
		want error
	}{
		{"unsupported alg", keys.Config{Store: newStore(), Alg: "HS256"}, keys.ErrUnsupportedAlg},
		{"alg none", keys.Config{Store: newStore(), Alg: "none"}, keys.ErrUnsupportedAlg},
		{"short master key", keys.Config{Store: newStore(), MasterKey: make([]byte, 16)}, nil},
		{"no store", keys.Config{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := keys.New(ctxT(t), tc.cfg)
			if err == nil {
				t.Fatal("New succeeded; want an error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("New = %v; want %v", err, tc.want)
			}
		})
	}
}

func TestSignVerify(t *testing.T) {
	for _, alg := range []string{"ES256", "EdDSA", "RS256"} {
		t.Run(alg, func(t *testing.T) {
			c := newClock()
			m := newManager(t, newStore(), c, func(cfg *keys.Config) { cfg.Alg = alg })
			tok, err := m.Sign(claimsAt(c.Now()))
			if err != nil {
				t.Fatalf("Sign: %v", err)
			}
			// Header: alg, kid of the active key, typ at+jwt.
			hb, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
			if err != nil {
				t.Fatal(err)
			}
			var hdr map[string]string
			if err := json.Unmarshal(hb, &hdr); err != nil {
				t.Fatal(err)
			}
			list, _ := m.List(ctxT(t))
			want := map[string]string{"alg": alg, "kid": kidOf(list, data.KeyActive), "typ": "at+jwt"}
			if !reflect.DeepEqual(hdr, want) {
				t.Errorf("header = %v; want %v", hdr, want)
			}
			got, err := newVerifier(t, m, c).Verify(ctxT(t), tok)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if got.Subject != "42" || got.ClientID != "client-1" || !reflect.DeepEqual(got.Scopes, []string{"BOOKING_READ", "PROFILE_READ"}) || got.Unrestricted {
				t.Errorf("claims = %+v", got)
			}
			// The public key Key returns verifies the signature directly.
			pub, kalg, err := m.Key(ctxT(t), want["kid"])
			if err != nil || kalg != alg {
				t.Fatalf("Key = %v, %q, %v", pub, kalg, err)
			}
			parts := strings.Split(tok, ".")
			sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
			if err := jwt.GetSigningMethod(alg).Verify(parts[0]+"."+parts[1], sig, pub); err != nil {
				t.Errorf("raw verify: %v", err)
			}
		})
	}
}

func TestRotate(t *testing.T) {
	st, c := newStore(), newClock()
	m := newManager(t, st, c, nil)
	v := newVerifier(t, m, c)
	before, _ := m.List(ctxT(t))
	oldTok, err := m.Sign(claimsAt(c.Now()))
	if err != nil {
		t.Fatal(err)
	}

	c.Add(30 * time.Second) // the next key was published 30s ago, under the 1m max-age: warn
	res, err := m.Rotate(ctxT(t), "EdDSA")
	if err != nil {
		t.Fatalf("Rotate: %v", err)
	}
	if res.Active.KID != kidOf(before, data.KeyNext) || res.Retired.KID != kidOf(before, data.KeyActive) {
		t.Errorf("Rotate = %+v; want next %s promoted, active %s retired", res, kidOf(before, data.KeyNext), kidOf(before, data.KeyActive))
	}
	if res.Next.Alg != "EdDSA" || res.Next.State != data.KeyNext || res.Active.Alg != "ES256" {
		t.Errorf("Rotate = %+v; want a new EdDSA next key, active still ES256", res)
	}
	if !res.Active.ActivatedAt.Equal(c.Now()) || !res.Retired.RetiredAt.Equal(c.Now()) {
		t.Errorf("times: activated %v retired %v; want %v", res.Active.ActivatedAt, res.Retired.RetiredAt, c.Now())
	}
	if !strings.Contains(res.Warning, "1m0s") || !strings.Contains(res.Warning, res.Active.KID) {
		t.Errorf("Warning = %q; want a note about the 1m0s JWKS cache and key %s", res.Warning, res.Active.KID)
	}
	by, n := states(t, st)
	if n[data.KeyActive] != 1 || n[data.KeyNext] != 1 || n[data.KeyRetired] != 1 {
		t.Errorf("states = %v; want one of each", by)
	}
	kids := jwksKIDs(t, m.JWKS())
	for _, kid := range []string{res.Active.KID, res.Retired.KID, res.Next.KID} {
		if _, ok := kids[kid]; !ok {
			t.Errorf("JWKS lacks %s; has %v", kid, kids)
		}
	}
	// The retired key forgot its private half.
	ks, _ := st.ListKeys(ctxT(t))
	for _, k := range ks {
		if k.State == data.KeyRetired && len(k.Private) != 0 {
			t.Errorf("retired key %s keeps its private key", k.KID)
		}
	}
	// Old tokens still verify; new tokens use the new active key.
	if _, err := v.Verify(ctxT(t), oldTok); err != nil {
		t.Errorf("token of the retired key: %v", err)
	}
	newTok, err := m.Sign(claimsAt(c.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if tk, _, _ := jwt.NewParser().ParseUnverified(newTok, jwt.MapClaims{}); tk.Header["kid"] != res.Active.KID {
		t.Errorf("new token kid = %v; want %s", tk.Header["kid"], res.Active.KID)
	}
	if _, err := v.Verify(ctxT(t), newTok); err != nil {
		t.Errorf("token of the new active key: %v", err)
	}

	// A next key published longer than JWKSMaxAge ago: no warning.
	c.Add(6 * time.Minute)
	res2, err := m.Rotate(ctxT(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if res2.Warning != "" {
		t.Errorf("Warning = %q; want none", res2.Warning)
	}
	if res2.Next.Alg != "ES256" {
		t.Errorf("default alg = %q; want ES256", res2.Next.Alg)
	}
	if _, err := m.Rotate(ctxT(t), "HS256"); !errors.Is(err, keys.ErrUnsupportedAlg) {
		t.Errorf("Rotate(HS256) = %v; want ErrUnsupportedAlg", err)
	}
}

func TestPrune(t *testing.T) {
	st, c := newStore(), newClock()
	m := newManager(t, st, c, func(cfg *keys.Config) { cfg.TokenTTL = 30 * time.Minute; cfg.Leeway = time.Minute })
	c.Add(10 * time.Minute)
	res, err := m.Rotate(ctxT(t), "")
	if err != nil {
		t.Fatal(err)
	}
	retired := res.Retired.KID
	tests := []struct {
		name      string
		advance   time.Duration
		published bool
	}{
		{"just retired", 0, true},
		{"at TTL", 30 * time.Minute, true},
		{"at TTL+leeway", time.Minute, true},
		{"after TTL+leeway", time.Second, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.Add(tc.advance)
			before := st.updates.Load()
			if err := m.Prune(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			_, _, err := m.Key(ctxT(t), retired)
			if got := err == nil; got != tc.published {
				t.Errorf("Key(retired) err = %v; want published=%v", err, tc.published)
			}
			if tc.published && st.updates.Load() != before {
				t.Errorf("Prune wrote with nothing to prune")
			}
			by, _ := states(t, st)
			if _, ok := by[retired]; ok != tc.published {
				t.Errorf("stored: %v; want retired key stored=%v", by, tc.published)
			}
			if _, ok := jwksKIDs(t, m.JWKS())[retired]; ok != tc.published {
				t.Errorf("JWKS has retired key = %v; want %v", ok, tc.published)
			}
		})
	}
}

func TestRevoke(t *testing.T) {
	tests := []struct {
		name  string
		state data.KeyState // "" = unknown kid
	}{
		{"active", data.KeyActive},
		{"next", data.KeyNext},
		{"retired", data.KeyRetired},
		{"unknown", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, c := newStore(), newClock()
			m := newManager(t, st, c, nil)
			v := newVerifier(t, m, c)
			c.Add(10 * time.Minute)
			activeTok, _ := m.Sign(claimsAt(c.Now()))
			if _, err := m.Rotate(ctxT(t), ""); err != nil {
				t.Fatal(err)
			}
			list, _ := m.List(ctxT(t))
			kid := kidOf(list, tc.state)
			if tc.state == "" {
				kid = "no-such-kid"
			}
			err := m.Revoke(ctxT(t), kid)
			if tc.state == "" {
				if !errors.Is(err, keys.ErrUnknownKey) {
					t.Fatalf("Revoke(unknown) = %v; want ErrUnknownKey", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Revoke: %v", err)
			}
			by, n := states(t, st)
			if _, ok := by[kid]; ok {
				t.Errorf("revoked key still stored")
			}
			if n[data.KeyActive] != 1 || n[data.KeyNext] != 1 {
				t.Errorf("states after revoke = %v; want exactly one active and one next", by)
			}
			if _, ok := jwksKIDs(t, m.JWKS())[kid]; ok {
				t.Errorf("revoked key still in the JWKS")
			}
			if _, _, err := m.Key(ctxT(t), kid); !errors.Is(err, keys.ErrUnknownKey) {
				t.Errorf("Key(revoked) = %v; want ErrUnknownKey", err)
			}
			after, _ := m.List(ctxT(t))
			switch tc.state {
			case data.KeyActive:
				if kidOf(after, data.KeyActive) != kidOf(list, data.KeyNext) {
					t.Errorf("revoking active did not promote next")
				}
			case data.KeyNext:
				if kidOf(after, data.KeyActive) != kidOf(list, data.KeyActive) {
					t.Errorf("revoking next changed the active key")
				}
			case data.KeyRetired:
				// The token the retired key signed no longer verifies.
				if _, err := v.Verify(ctxT(t), activeTok); !errors.Is(err, verify.ErrUnknownKey) {
					t.Errorf("token of the revoked key: %v; want ErrUnknownKey", err)
				}
			}
			tok, err := m.Sign(claimsAt(c.Now()))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := v.Verify(ctxT(t), tok); err != nil {
				t.Errorf("new token after revoke: %v", err)
			}
		})
	}
}

func TestConcurrentRotate(t *testing.T) {
	st, c := newStore(), newClock()
	m1 := newManager(t, st, c, nil)
	m2 := newManager(t, st, c, nil) // e.g. the server and a CLI on the same store
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := range 10 {
		m := m1
		if i%2 == 1 {
			m = m2
		}
		wg.Go(func() {
			_, err := m.Rotate(ctxT(t), "")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Rotate: %v", err)
		}
	}
	by, n := states(t, st)
	if n[data.KeyActive] != 1 || n[data.KeyNext] != 1 || n[data.KeyRetired] != 10 {
		t.Errorf("states = %v (%v); want 1 active, 1 next, 10 retired", n, by)
	}
	for _, m := range []*keys.Manager{m1, m2} {
		if err := m.Reload(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if got := len(jwksKIDs(t, m.JWKS())); got != 12 {
			t.Errorf("JWKS has %d keys; want 12", got)
		}
	}
}

func TestReloadSeesOtherWriter(t *testing.T) {
	st, c := newStore(), newClock()
	server := newManager(t, st, c, nil)
	cli := newManager(t, st, c, nil)
	res, err := cli.Rotate(ctxT(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := server.Key(ctxT(t), res.Next.KID); !errors.Is(err, keys.ErrUnknownKey) {
		t.Fatalf("server knows the CLI's key before Reload: %v", err)
	}
	if err := server.Reload(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	tok, _ := server.Sign(claimsAt(c.Now()))
	if tk, _, _ := jwt.NewParser().ParseUnverified(tok, jwt.MapClaims{}); tk.Header["kid"] != res.Active.KID {
		t.Errorf("after Reload the server signs with %v; want %s", tk.Header["kid"], res.Active.KID)
	}
}

func TestSealing(t *testing.T) {
	master := bytes.Repeat([]byte{7}, 32)
	other := bytes.Repeat([]byte{8}, 32)
	withKey := func(k []byte) func(*keys.Config) { return func(cfg *keys.Config) { cfg.MasterKey = k } }

	t.Run("sealed at rest", func(t *testing.T) {
		st, c := newStore(), newClock()
		m := newManager(t, st, c, withKey(master))
		ks, _ := st.ListKeys(ctxT(t))
		for _, k := range ks {
			if !k.Sealed || bytes.Contains(k.Private, []byte(`"d"`)) || bytes.Contains(k.Private, []byte(`"kty"`)) {
				t.Errorf("key %s: Sealed=%v, private looks like plain JSON", k.KID, k.Sealed)
			}
		}
		// Reload with the right key works and signs.
		m2 := newManager(t, st, c, withKey(master))
		tok, err := m2.Sign(claimsAt(c.Now()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := newVerifier(t, m, c).Verify(ctxT(t), tok); err != nil {
			t.Errorf("Verify: %v", err)
		}
	})

	for _, tc := range []struct {
		name string
		key  []byte
		want error
	}{
		{"wrong master key", other, keys.ErrBadMasterKey},
		{"no master key", nil, keys.ErrSealed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, c := newStore(), newClock()
			newManager(t, st, c, withKey(master))
			before, _ := st.ListKeys(ctxT(t))
			writes := st.updates.Load()
			_, err := keys.New(ctxT(t), keys.Config{Store: st, Logger: discard(), Now: c.Now, MasterKey: tc.key})
			if !errors.Is(err, tc.want) {
				t.Fatalf("New = %v; want %v", err, tc.want)
			}
			after, _ := st.ListKeys(ctxT(t))
			if !reflect.DeepEqual(before, after) || st.updates.Load() != writes {
				t.Errorf("store changed")
			}
		})
	}

	t.Run("unsealed keys sealed in place", func(t *testing.T) {
		st, c := newStore(), newClock()
		plain := newManager(t, st, c, nil)
		before, _ := st.ListKeys(ctxT(t))
		writes := st.updates.Load()
		sealed := newManager(t, st, c, withKey(master))
		if n := st.updates.Load() - writes; n != 1 {
			t.Errorf("sealing took %d UpdateKeys; want 1", n)
		}
		after, _ := st.ListKeys(ctxT(t))
		if len(after) != len(before) {
			t.Fatalf("keys: %d → %d", len(before), len(after))
		}
		for i, k := range after {
			if !k.Sealed || bytes.Equal(k.Private, before[i].Private) || k.KID != before[i].KID {
				t.Errorf("key %s not sealed in place", k.KID)
			}
		}
		if !bytes.Equal(plain.JWKS(), sealed.JWKS()) {
			t.Errorf("sealing changed the JWKS")
		}
	})
}

func TestParseMasterKey(t *testing.T) {
	raw := bytes.Repeat([]byte{0xab}, 32)
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"hex", strings.Repeat("ab", 32), true},
		{"hex with newline", strings.Repeat("AB", 32) + "\n", true},
		{"base64 std", base64.StdEncoding.EncodeToString(raw), true},
		{"base64 raw url", base64.RawURLEncoding.EncodeToString(raw), true},
		{"short hex", strings.Repeat("ab", 16), false},
		{"base64 of 31 bytes", base64.StdEncoding.EncodeToString(raw[:31]), false},
		{"empty", "", false},
		{"garbage", "correct horse battery staple", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := keys.ParseMasterKey(tc.in)
			if tc.ok != (err == nil) {
				t.Fatalf("ParseMasterKey = %v; want ok=%v", err, tc.ok)
			}
			if tc.ok && !bytes.Equal(got, raw) {
				t.Errorf("ParseMasterKey = %x; want %x", got, raw)
			}
			if err != nil && tc.in != "" && strings.Contains(err.Error(), strings.TrimSpace(tc.in)) {
				t.Errorf("error repeats the input: %v", err)
			}
		})
	}
}

func TestServeJWKS(t *testing.T) {
	c := newClock()
	m := newManager(t, newStore(), c, func(cfg *keys.Config) { cfg.JWKSMaxAge = 300 * time.Second })
	e := echo.New()
	e.GET("/.well-known/jwks.json", m.ServeJWKS)

	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/jwks.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d", rec.Code)
	}
	for h, want := range map[string]string{"Content-Type": "application/json", "Cache-Control": "public, max-age=300"} {
		if got := rec.Header().Get(h); got != want {
			t.Errorf("%s = %q; want %q", h, got, want)
		}
	}
	if !bytes.Equal(rec.Body.Bytes(), m.JWKS()) {
		t.Errorf("body differs from JWKS()")
	}
	if len(jwksKIDs(t, rec.Body.Bytes())) != 2 {
		t.Errorf("body: %s", rec.Body)
	}
	etag := rec.Header().Get("ETag")
	req := httptest.NewRequest(http.MethodGet, "/.well-known/jwks.json", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified || etag == "" {
		t.Errorf("If-None-Match %q: status %d; want 304", etag, rec.Code)
	}
	// After a rotation the ETag changes.
	if _, err := m.Rotate(ctxT(t), ""); err != nil {
		t.Fatal(err)
	}
	rec = httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("after rotation, If-None-Match old etag: status %d; want 200", rec.Code)
	}
}

// TestInfoJSON: a key never activated or not retired has null
// activated_at and retired_at (every --json record names all its fields).
func TestInfoJSON(t *testing.T) {
	i := keys.Info{KID: "k", Alg: "ES256", State: data.KeyNext, CreatedAt: t0}
	b, err := json.Marshal(i)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kid":"k","alg":"ES256","state":"next","created_at":"2026-03-01T12:00:00Z","activated_at":null,"retired_at":null}`
	if string(b) != want {
		t.Errorf("Info JSON = %s; want %s", b, want)
	}
}
