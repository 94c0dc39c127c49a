package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Errors of the revoked-grants check; [Verifier.Verify] wraps them in
// [ErrInvalidToken].
var (
	// ErrGrantRevoked: the token's grant is in the issuer's revoked-grants
	// feed.
	ErrGrantRevoked = errors.New("grant revoked")
	// ErrFeedStale: the feed has not been fetched for longer than
	// FeedConfig.MaxStale (only when MaxStale is set).
	ErrFeedStale = errors.New("revoked-grants feed is stale")
)

// RevokedGrants tells the verifier whether a grant was revoked. It is
// called on every token with a grant_id, on the request path, and must not
// block: [RevocationFeed] answers from a map.
type RevokedGrants interface {
	// CheckGrant returns nil when grantID may be used, or an error
	// (wrapping ErrGrantRevoked or ErrFeedStale) when it may not.
	CheckGrant(grantID string) error
}

// Defaults of [FeedConfig].
const (
	DefaultFeedInterval = 2 * time.Second
	// MinFeedInterval is the shortest fetch interval a gateway may be
	// configured with.
	MinFeedInterval = 100 * time.Millisecond
	maxFeedBytes    = 4 << 20
)

// FeedConfig configures a [RevocationFeed].
type FeedConfig struct {
	// URL of the feed, e.g. https://api.example.com/.well-known/revoked-grants.
	URL string
	// Issuer is the expected iss. Required.
	Issuer string
	// Keys verifies the feed's signature: the issuer's JWKS (the same
	// key source as the verifier's). Required.
	Keys KeySource
	// Client fetches the feed. Default: an http.Client with a 10 s timeout.
	Client *http.Client
	// Interval between two fetches. Default 2 s.
	Interval time.Duration
	// MaxStale, when positive, makes CheckGrant refuse every grant once
	// the last successful fetch is older than that (fail closed). Zero
	// (the default) keeps using the last list fetched, whatever its age
	// (fail open: while the issuer is unreachable, a grant revoked
	// meanwhile is refused only when its tokens expire, as without a feed).
	MaxStale time.Duration
	// Leeway is the clock skew allowed on the feed's iat and exp
	// (default 60 s).
	Leeway time.Duration
	Logger *slog.Logger     // default: discard
	Now    func() time.Time // default: time.Now
}

// RevocationFeed follows the issuer's revoked-grants feed in the
// background ([RevocationFeed.Run]) and answers [RevokedGrants] from the
// last verified list: one map lookup, no call on the request path. It is
// safe for concurrent use.
type RevocationFeed struct {
	cfg   FeedConfig
	state atomic.Pointer[feedState]

	mu   sync.Mutex // serializes fetches
	etag string     // of the last document applied; guarded by mu

	fetches, failures atomic.Uint64
}

type feedState struct {
	revoked  map[string]struct{}
	issuedAt time.Time // the document's iat
	checked  time.Time // when the issuer last confirmed it (200 or 304)
}

// NewRevocationFeed returns a feed follower; nothing is fetched until
// Refresh or Run.
func NewRevocationFeed(cfg FeedConfig) (*RevocationFeed, error) {
	if cfg.URL == "" || cfg.Issuer == "" || cfg.Keys == nil {
		return nil, errors.New("verify: FeedConfig needs URL, Issuer and Keys")
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: fetchTimeout, Transport: TracedTransport("fetch revoked grants")}
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultFeedInterval
	}
	if cfg.Leeway <= 0 {
		cfg.Leeway = DefaultLeeway
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &RevocationFeed{cfg: cfg}, nil
}

var _ RevokedGrants = (*RevocationFeed)(nil)

// CheckGrant implements [RevokedGrants].
func (f *RevocationFeed) CheckGrant(grantID string) error {
	st := f.state.Load()
	if f.cfg.MaxStale > 0 && (st == nil || f.cfg.Now().Sub(st.checked) > f.cfg.MaxStale) {
		return ErrFeedStale
	}
	if st == nil {
		return nil
	}
	if _, ok := st.revoked[grantID]; ok {
		return ErrGrantRevoked
	}
	return nil
}

// FeedStatus describes the list a [RevocationFeed] uses.
type FeedStatus struct {
	Grants   int       // revoked grants in the list
	IssuedAt time.Time // iat of the document it came from; zero before the first
	Checked  time.Time // last time the issuer confirmed it; zero before the first
	Fetches  uint64    // fetches attempted
	Failures uint64    // of which failed
}

// Status reports the list in use; Checked tells its staleness.
func (f *RevocationFeed) Status() FeedStatus {
	s := FeedStatus{Fetches: f.fetches.Load(), Failures: f.failures.Load()}
	if st := f.state.Load(); st != nil {
		s.Grants, s.IssuedAt, s.Checked = len(st.revoked), st.issuedAt, st.checked
	}
	return s
}

// Run fetches the feed every Interval until ctx is done. A failed fetch is
// logged and the last list kept.
func (f *RevocationFeed) Run(ctx context.Context) {
	t := time.NewTicker(f.cfg.Interval)
	defer t.Stop()
	for {
		if err := f.Refresh(ctx); err != nil && ctx.Err() == nil {
			f.cfg.Logger.WarnContext(ctx, "revoked-grants feed fetch failed; keeping the last list",
				"url", f.cfg.URL, "err", err, "last_checked", f.Status().Checked)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh fetches the feed once and, if it verifies, uses its list.
func (f *RevocationFeed) Refresh(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetches.Add(1)
	err := f.fetch(ctx)
	if err != nil {
		f.failures.Add(1)
	}
	return err
}

func (f *RevocationFeed) fetch(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.cfg.URL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/jwt")
	cur := f.state.Load()
	if cur != nil && f.etag != "" {
		req.Header.Set("If-None-Match", f.etag)
	}
	resp, err := f.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	now := f.cfg.Now()
	switch {
	case resp.StatusCode == http.StatusNotModified && cur != nil:
		// The issuer confirms the list is unchanged.
		next := *cur
		next.checked = now
		f.state.Store(&next)
		return nil
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("GET %s: status %d", f.cfg.URL, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxFeedBytes+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", f.cfg.URL, err)
	}
	if len(body) > maxFeedBytes {
		return fmt.Errorf("GET %s: feed larger than %d bytes", f.cfg.URL, maxFeedBytes)
	}
	claims, err := f.parse(ctx, strings.TrimSpace(string(body)))
	if err != nil {
		return fmt.Errorf("GET %s: %w", f.cfg.URL, err)
	}
	iat := claims.IssuedAt.Time
	if cur != nil && iat.Before(cur.issuedAt) {
		// An older document than the one in use (a replay, or a lagging
		// cache): it could take back a revocation. Keep ours.
		return fmt.Errorf("GET %s: feed issued at %s, older than the one in use (%s)", f.cfg.URL, iat.UTC().Format(time.RFC3339), cur.issuedAt.UTC().Format(time.RFC3339))
	}
	set := make(map[string]struct{}, len(claims.Revoked))
	for _, id := range claims.Revoked {
		set[id] = struct{}{}
	}
	f.state.Store(&feedState{revoked: set, issuedAt: iat, checked: now})
	f.etag = resp.Header.Get("ETag")
	return nil
}

// parse verifies the feed document: compact JWS, typ revoked-grants+jwt,
// alg one of [Algs] and equal to the key's, signature by a key of Keys,
// iss, iat and exp (required, with leeway).
func (f *RevocationFeed) parse(ctx context.Context, doc string) (*FeedClaims, error) {
	if !compactJWS(doc) {
		return nil, errors.New("feed: malformed")
	}
	parts := strings.Split(doc, ".")
	if len(parts) != 3 {
		return nil, errors.New("feed: malformed")
	}
	hb, err := b64.DecodeString(parts[0])
	if err != nil {
		return nil, errors.New("feed: malformed header")
	}
	h, ok := parseHeader(hb)
	if !ok {
		return nil, errors.New("feed: malformed header")
	}
	if !strings.EqualFold(h.typ, FeedTyp) {
		return nil, fmt.Errorf("feed: typ %q is not %s", truncate(h.typ, 32), FeedTyp)
	}
	method, err := h.method()
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	if h.kid == "" {
		return nil, errors.New("feed: no kid")
	}
	pub, alg, err := f.cfg.Keys.Key(ctx, h.kid)
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	if alg != method.Alg() {
		return nil, errors.New("feed: alg does not match the key's")
	}
	if err := checkKeyType(pub, alg); err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil {
		return nil, errors.New("feed: malformed signature")
	}
	if method == jwt.SigningMethodES256 && highS(sig) {
		return nil, errors.New("feed: bad signature")
	}
	if err := method.Verify(parts[0]+"."+parts[1], sig, pub); err != nil {
		return nil, errors.New("feed: bad signature")
	}
	pb, err := b64.DecodeString(parts[1])
	if err != nil {
		return nil, errors.New("feed: malformed payload")
	}
	var c FeedClaims
	if err := json.Unmarshal(pb, &c); err != nil {
		return nil, errors.New("feed: malformed payload")
	}
	val := jwt.NewValidator(jwt.WithIssuer(f.cfg.Issuer), jwt.WithExpirationRequired(), jwt.WithIssuedAt(),
		jwt.WithLeeway(f.cfg.Leeway), jwt.WithTimeFunc(f.cfg.Now))
	if err := val.Validate(&c); err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	if c.IssuedAt == nil {
		return nil, errors.New("feed: no iat")
	}
	return &c, nil
}
