package verify_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"

	"oauthd/data"
	"oauthd/keys/verify"
	"oauthd/keys/verify/dpoptest"
)

const htu = "https://as.example/v2/auth/oauth2/token"

func TestDPoPCheck(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	d := verify.NewDPoP(verify.DPoPConfig{Now: func() time.Time { return now }})
	for _, k := range []*dpoptest.Key{dpoptest.NewES256(), dpoptest.NewEdDSA()} {
		t.Run(string(k.Alg), func(t *testing.T) {
			p := k.Proof("POST", htu, "")
			jkt, err := d.Check(ctx, p, "POST", htu, "")
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if jkt != k.JKT() {
				t.Fatalf("jkt %q, want %q", jkt, k.JKT())
			}
			if _, err := d.Check(ctx, p, "POST", htu, ""); !errors.Is(err, verify.ErrInvalidProof) || !strings.Contains(err.Error(), "replayed") {
				t.Fatalf("replayed proof: %v", err)
			}
		})
	}
}

func TestDPoPCheckRefuses(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	d := verify.NewDPoP(verify.DPoPConfig{Now: func() time.Time { return now }})
	k := dpoptest.NewES256()
	other := dpoptest.NewEdDSA()
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	privJWK, _ := jwk.FromRaw(priv)
	withPrivate := func() string {
		h := jws.NewHeaders()
		_ = h.Set(jws.TypeKey, "dpop+jwt")
		_ = h.Set(jws.JWKKey, privJWK)
		out, _ := jws.Sign([]byte(`{"jti":"x1","htm":"POST","htu":"`+htu+`","iat":`+itoa(now.Unix())+`}`),
			jws.WithKey(jwa.ES256, priv, jws.WithProtectedHeaders(h)))
		return string(out)
	}
	hs256 := func() string {
		h := jws.NewHeaders()
		_ = h.Set(jws.TypeKey, "dpop+jwt")
		out, _ := jws.Sign([]byte(`{"jti":"x2","htm":"POST","htu":"`+htu+`","iat":`+itoa(now.Unix())+`}`),
			jws.WithKey(jwa.HS256, []byte("secretsecretsecretsecretsecret12"), jws.WithProtectedHeaders(h)))
		return string(out)
	}
	token := "header.payload.sig"
	for _, tc := range []struct {
		name, proof, method, htu, token string
	}{
		{"missing", "", "POST", htu, ""},
		{"garbage", "a.b.c", "POST", htu, ""},
		{"wrong typ", k.Sign(dpoptest.Claims{HTM: "POST", HTU: htu}, "JWT"), "POST", htu, ""},
		{"wrong method", k.Proof("GET", htu, ""), "POST", htu, ""},
		{"wrong htu", k.Proof("POST", "https://as.example/v2/other", ""), "POST", htu, ""},
		{"other host", k.Proof("POST", "https://evil.example/v2/auth/oauth2/token", ""), "POST", htu, ""},
		{"iat too old", k.Sign(dpoptest.Claims{HTM: "POST", HTU: htu, IAT: now.Add(-2 * time.Minute).Unix()}, "dpop+jwt"), "POST", htu, ""},
		{"iat in the future", k.Sign(dpoptest.Claims{HTM: "POST", HTU: htu, IAT: now.Add(2 * time.Minute).Unix()}, "dpop+jwt"), "POST", htu, ""},
		{"no ath", k.Proof("GET", htu, ""), "GET", htu, token},
		{"wrong ath", k.Proof("GET", htu, "another.token.here"), "GET", htu, token},
		{"private key in jwk", withPrivate(), "POST", htu, ""},
		{"HS256", hs256(), "POST", htu, ""},
		{"signed by another key", swapSignature(k.Proof("POST", htu, ""), other.Proof("POST", htu, "")), "POST", htu, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := d.Check(ctx, tc.proof, tc.method, tc.htu, tc.token); !errors.Is(err, verify.ErrInvalidProof) {
				t.Fatalf("Check: %v; want ErrInvalidProof", err)
			}
		})
	}
	t.Run("ath ok", func(t *testing.T) {
		if _, err := d.Check(ctx, k.Proof("GET", htu, token), "GET", htu, token); err != nil {
			t.Fatal(err)
		}
	})
}

func swapSignature(a, b string) string {
	return a[:strings.LastIndexByte(a, '.')] + b[strings.LastIndexByte(b, '.'):]
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestNormalizeHTU(t *testing.T) {
	for in, want := range map[string]string{
		"https://AS.example:443/v2/me?x=1#f": "https://as.example/v2/me",
		"HTTP://as.example:80":               "http://as.example/",
		"https://as.example:8443/a%2fb":      "https://as.example:8443/a/b",
		"https://as.example/%7Euser":         "https://as.example/~user",
		"http://[::1]:9000/v2/me":            "http://[::1]:9000/v2/me",
	} {
		got, err := verify.NormalizeHTU(in)
		if err != nil || got != want {
			t.Errorf("NormalizeHTU(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"/v2/me", "ftp://as.example/", "https://user@as.example/"} {
		if _, err := verify.NormalizeHTU(in); err == nil {
			t.Errorf("NormalizeHTU(%q) accepted", in)
		}
	}
}

func TestMemoryNonces(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	n := verify.NewMemoryNonces(2, func() time.Time { return now })
	exp := now.Add(time.Minute)
	if err := n.UseNonce(ctx, []byte("a"), exp); err != nil {
		t.Fatal(err)
	}
	if err := n.UseNonce(ctx, []byte("a"), exp); !errors.Is(err, data.ErrExists) {
		t.Fatalf("replay: %v", err)
	}
	if err := n.UseNonce(ctx, []byte("b"), exp); err != nil {
		t.Fatal(err)
	}
	// Full of live entries: refused, never forgetting a live one.
	if err := n.UseNonce(ctx, []byte("c"), exp); !errors.Is(err, verify.ErrReplayCacheFull) {
		t.Fatalf("full: %v", err)
	}
	now = now.Add(2 * time.Minute) // a and b expire
	if err := n.UseNonce(ctx, []byte("c"), now.Add(time.Minute)); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if n.Len() != 1 {
		t.Fatalf("Len %d, want 1", n.Len())
	}
}

// TestMemoryNoncesFilter: a filter cache never refuses; when full it
// forgets its oldest entry, and remembers the rest.
func TestMemoryNoncesFilter(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	n := verify.NewMemoryNoncesFilter(3, func() time.Time { return now })
	exp := now.Add(time.Minute)
	for _, k := range []string{"a", "b", "c", "d"} {
		if err := n.UseNonce(context.Background(), []byte(k), exp); err != nil {
			t.Fatalf("UseNonce(%s) = %v; want nil (a filter never refuses)", k, err)
		}
	}
	if n.Len() != 3 {
		t.Fatalf("Len = %d; want 3", n.Len())
	}
	if err := n.UseNonce(context.Background(), []byte("a"), exp); err != nil {
		t.Errorf("the oldest entry (a) was not forgotten: %v", err)
	}
	if err := n.UseNonce(context.Background(), []byte("d"), exp); !errors.Is(err, data.ErrExists) {
		t.Errorf("a remembered entry (d): %v; want ErrExists", err)
	}
}
