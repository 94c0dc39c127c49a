package issuer_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/data/memory"
	"oauthd/issuer"
	"oauthd/keys/verify"
)

// feedKey signs like keys.Manager.SignTyped, and is the KeySource.
type feedKey struct{ priv *ecdsa.PrivateKey }

func (k feedKey) SignTyped(typ string, claims jwt.Claims) (string, error) {
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	tok.Header["typ"], tok.Header["kid"] = typ, "k1"
	for {
		s, err := tok.SignedString(k.priv)
		if err != nil || lowS(s) {
			return s, err
		}
	}
}

func (k feedKey) Key(_ context.Context, kid string) (crypto.PublicKey, string, error) {
	if kid != "k1" {
		return nil, "", verify.ErrUnknownKey
	}
	return &k.priv.PublicKey, verify.ES256, nil
}

// lowS reports whether an ES256 JWS has the low S the verifiers require.
func lowS(tok string) bool {
	i := strings.LastIndexByte(tok, '.')
	sig, err := base64.RawURLEncoding.DecodeString(tok[i+1:])
	if err != nil || len(sig) != 64 {
		return false
	}
	half := new(big.Int).Rsh(elliptic.P256().Params().N, 1)
	return new(big.Int).SetBytes(sig[32:]).Cmp(half) <= 0
}

// TestRevokedGrantsFeed: a family deleted (revoked) appears in the feed
// served over HTTP, which a verify.RevocationFeed follows; a family that
// only expired does not; one whose last token was issued more than the
// access-token lifetime + leeway ago leaves the feed; the ETag gives 304.
func TestRevokedGrantsFeed(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	st := memory.New()
	for _, id := range []string{"gA", "gB", "gC"} {
		code := data.AuthCode{Hash: data.Hash(id), ClientID: "c", UserID: 1, RedirectURI: "https://x/cb", Scopes: []string{"BOOKING_READ"}, CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
		if err := st.CreateAuthCode(ctx, code); err != nil {
			t.Fatal(err)
		}
		issued := now
		if id == "gC" {
			issued = now.Add(-40 * time.Minute) // its last token has expired
		}
		if _, _, err := st.ExchangeAuthCode(ctx, code.Hash, func(data.AuthCode) (data.Family, error) {
			return data.Family{ID: id, ClientID: "c", UserID: 1, Scopes: []string{"BOOKING_READ"}, TokenHash: data.Hash(id + "rt"),
				CreatedAt: issued, RotatedAt: issued, ExpiresAt: now.Add(time.Hour), AbsoluteExp: now.Add(time.Hour)}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"gA", "gC"} {
		if err := st.DeleteFamily(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	key := feedKey{priv}
	feed, err := issuer.NewFeed(issuer.FeedConfig{Store: st, Signer: key, Issuer: "https://oauthd.test", Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	feed.Register(e)
	srv := httptest.NewServer(e)
	defer srv.Close()

	resp, err := http.Get(srv.URL + verify.FeedPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "public, max-age=1" || etag == "" ||
		resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("GET feed = %d, headers %v", resp.StatusCode, resp.Header)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+verify.FeedPath, nil)
	req.Header.Set("If-None-Match", etag)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotModified {
		t.Fatalf("GET feed with If-None-Match = %v %v; want 304", resp, err)
	}

	f, err := verify.NewRevocationFeed(verify.FeedConfig{URL: srv.URL + verify.FeedPath, Issuer: "https://oauthd.test", Keys: key, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Refresh(ctx); err != nil {
		t.Fatalf("follower Refresh: %v", err)
	}
	for id, want := range map[string]error{"gA": verify.ErrGrantRevoked, "gB": nil, "gC": nil} {
		if err := f.CheckGrant(id); !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Errorf("CheckGrant(%s) = %v; want %v", id, err, want)
		}
	}
	// A revocation reaches the feed once its document is MaxAge old.
	if err := st.DeleteFamily(ctx, "gB"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	if err := f.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.CheckGrant("gB"); !errors.Is(err, verify.ErrGrantRevoked) {
		t.Fatalf("CheckGrant(gB) after its revocation = %v; want ErrGrantRevoked", err)
	}
	// 32 minutes later gA's tokens have all expired: it leaves the feed.
	now = now.Add(32 * time.Minute)
	if err := f.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.CheckGrant("gA"); err != nil {
		t.Fatalf("CheckGrant(gA) after its tokens expired = %v; want nil (out of the window)", err)
	}
}
