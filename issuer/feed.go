package issuer

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"

	"oauthd/data"
	"oauthd/data/oauth"
	"oauthd/keys/verify"
)

// FeedSigner signs the revoked-grants feed with the active key under a typ
// of its own; *keys.Manager is one.
type FeedSigner interface {
	SignTyped(typ string, claims jwt.Claims) (string, error)
}

// FeedConfig configures a [Feed]. Zero durations take the defaults shown.
type FeedConfig struct {
	// Store lists the revocations (data.Store.ListRevoked). Required.
	Store interface {
		ListRevoked(ctx context.Context, since time.Time) ([]data.Revocation, error)
	}
	Signer FeedSigner // required
	Issuer string     // the iss of the feed and of access tokens. Required.
	// AccessTTL is the access-token lifetime (default 30 min) and Leeway
	// the verifiers' clock skew (default 60 s): the feed lists the grants
	// revoked whose last token was issued within AccessTTL + Leeway + 1 min.
	AccessTTL time.Duration
	Leeway    time.Duration
	// MaxAge is the document's Cache-Control max-age and how long one
	// signed document is served before the store is asked again
	// (default 1 s).
	MaxAge time.Duration
	// Lifetime is exp − iat of a document (default 5 min): a follower
	// refuses an older one, so an old document cannot be replayed to
	// take a revocation back.
	Lifetime time.Duration
	Logger   *slog.Logger     // default: discard
	Now      func() time.Time // default: time.Now
	// Outage is told of a document refused because the store was
	// unavailable (logged once per outage); nil: such failures are
	// logged like any other.
	Outage *Outage
}

// Feed serves GET {base_url}/.well-known/revoked-grants: the grants revoked
// whose access tokens may still be valid, as one JWS signed with the active
// key (see [verify.FeedClaims], docs/DESIGN.md "Revocation that reaches
// offline verifiers"). Every replica computes it from the store, so all
// serve the same list.
type Feed struct {
	cfg    FeedConfig
	window time.Duration

	mu    sync.Mutex
	doc   []byte // the current signed document
	etag  string
	built time.Time
}

// NewFeed checks cfg and returns a Feed.
func NewFeed(cfg FeedConfig) (*Feed, error) {
	if cfg.Store == nil || cfg.Signer == nil || cfg.Issuer == "" {
		return nil, errors.New("issuer: FeedConfig needs Store, Signer and Issuer")
	}
	cfg.Issuer = strings.TrimSuffix(cfg.Issuer, "/")
	if cfg.AccessTTL <= 0 {
		cfg.AccessTTL = 30 * time.Minute
	}
	if cfg.Leeway <= 0 {
		cfg.Leeway = verify.DefaultLeeway
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = time.Second
	}
	if cfg.Lifetime <= 0 {
		cfg.Lifetime = 5 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	window := cfg.AccessTTL + cfg.Leeway + time.Minute
	if window >= data.RevocationKeep {
		return nil, errors.New("issuer: the access-token lifetime must be well under data.RevocationKeep (the revocations kept)")
	}
	return &Feed{cfg: cfg, window: window}, nil
}

// Register mounts the feed on e.
func (f *Feed) Register(e *echo.Echo) {
	e.GET(verify.FeedPath, f.handle)
}

func (f *Feed) handle(c echo.Context) error {
	ctx := c.Request().Context()
	h := c.Response().Header()
	// A public document, fetched without credentials: any origin may read it.
	h.Set("Access-Control-Allow-Origin", "*")
	doc, etag, err := f.current(ctx)
	if err != nil {
		if Unavailable(err) && f.cfg.Outage != nil {
			f.cfg.Outage.Refused(ctx, err)
		} else {
			f.cfg.Logger.ErrorContext(ctx, "revoked-grants feed", "err", err)
		}
		h.Set("Cache-Control", "no-store")
		h.Set("Retry-After", "1")
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"error": oauth.TemporarilyUnavailable})
	}
	h.Set("Cache-Control", "public, max-age="+strconv.FormatInt(int64(f.cfg.MaxAge/time.Second), 10))
	h.Set("ETag", etag)
	if match := c.Request().Header.Get("If-None-Match"); match != "" && etagMatch(match, etag) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.Blob(http.StatusOK, "application/jwt", doc)
}

// current returns the signed document, rebuilt when the one it has is
// MaxAge old. One request at a time rebuilds; the others wait for it.
func (f *Feed) current(ctx context.Context) ([]byte, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.cfg.Now()
	if f.doc != nil && now.Sub(f.built) < f.cfg.MaxAge && !now.Before(f.built) {
		return f.doc, f.etag, nil
	}
	rs, err := f.cfg.Store.ListRevoked(ctx, now.Add(-f.window))
	if err != nil {
		return nil, "", err
	}
	ids := make([]string, len(rs))
	sum := sha256.New()
	for i, r := range rs {
		ids[i] = r.GrantID
		sum.Write([]byte(r.GrantID))
		sum.Write([]byte{'\n'})
	}
	claims := verify.FeedClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    f.cfg.Issuer,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(f.cfg.Lifetime)),
		},
		Window:  int64(f.window / time.Second),
		Revoked: ids,
	}
	tok, err := f.cfg.Signer.SignTyped(verify.FeedTyp, claims)
	if err != nil {
		return nil, "", err
	}
	f.doc, f.built = []byte(tok), now
	f.etag = `"` + base64.RawURLEncoding.EncodeToString(sum.Sum(nil)[:16]) + `"`
	return f.doc, f.etag, nil
}

// etagMatch reports whether the If-None-Match value names etag (or is *).
func etagMatch(header, etag string) bool {
	for v := range strings.SplitSeq(header, ",") {
		v = strings.TrimPrefix(strings.TrimSpace(v), "W/")
		if v == etag || v == "*" {
			return true
		}
	}
	return false
}
