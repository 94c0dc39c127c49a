package handover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"oauthd/keys/verify"
)

// Errors of [Verifier.Verify], each wrapped with the detail. Package
// consent tells the user which one happened.
var (
	// ErrMalformed: not a JWT, or a claim is missing or has the wrong type.
	ErrMalformed = errors.New("malformed login assertion")
	// ErrSignature: the signature does not verify with any key the
	// platform publishes (forged, or signed by an unknown key), or the
	// algorithm is not allowed.
	ErrSignature = errors.New("login assertion signature invalid")
	// ErrExpired: exp is past (beyond the leeway).
	ErrExpired = errors.New("login assertion expired")
	// ErrNotYetValid: iat (or nbf) is in the future (beyond the leeway).
	ErrNotYetValid = errors.New("login assertion issued in the future")
	// ErrLifetime: exp - iat is more than MaxLifetime.
	ErrLifetime = errors.New("login assertion lives too long")
	// ErrAudience: aud is not exactly oauthd's issuer.
	ErrAudience = errors.New("login assertion is for another audience")
	// ErrIssuer: iss is not the configured platform.
	ErrIssuer = errors.New("login assertion from another issuer")
	// ErrKeys: the platform's keys could not be fetched or read.
	ErrKeys = errors.New("platform keys unavailable")
)

// Limits of an assertion.
const (
	// MaxLifetime is the longest exp - iat accepted.
	MaxLifetime = 60 * time.Second
	// Leeway is the clock skew allowed on exp and iat, either way.
	Leeway = 5 * time.Second
	// maxToken bounds the assertion's length.
	maxToken = 8 << 10
)

// DefaultMaxAge is the default [Config.MaxAge].
const DefaultMaxAge = 5 * time.Minute

// Algs are the signature algorithms accepted.
var Algs = []string{"ES256", "EdDSA", "RS256"}

// Assertion is a verified login assertion.
type Assertion struct {
	Issuer  string
	Subject string // the user's ID at the platform
	Email   string
	Name    string
	// TimeZone is the time_zone claim; nil when the assertion has none
	// (then UTC), so that an empty one can be refused.
	TimeZone  *string
	Challenge string
	ID        string // jti
	// Disabled: the platform says the user's account has ended.
	Disabled  bool
	IssuedAt  time.Time
	ExpiresAt time.Time
}

// claims is the JSON of an assertion.
type claims struct {
	jwt.RegisteredClaims
	Email     string  `json:"email"`
	Name      string  `json:"name"`
	TimeZone  *string `json:"time_zone"`
	Challenge string  `json:"challenge"`
	Disabled  bool    `json:"disabled"`
}

// Config configures a [Verifier].
type Config struct {
	// Issuer is the platform's iss (required).
	Issuer string
	// Audience is oauthd's issuer identifier, its base URL (required).
	Audience string
	// Keys is the platform's JWKS URL (http or https), or the path of a
	// file holding a JWKS or PEM public keys (required).
	Keys string
	// HTTPClient fetches a JWKS URL; default one with a 10 s timeout.
	HTTPClient *http.Client
	// MaxAge is the longest fetched keys are used before they are fetched
	// again, and so the longest a key the platform removed from its JWKS
	// (say, after a leak) is still accepted; default [DefaultMaxAge]. A
	// JWKS response's Cache-Control max-age (no-store, no-cache: 0) is
	// followed below it. A key file is reread after MaxAge too.
	MaxAge time.Duration
	// MinRefresh is the least time between two fetches caused by an
	// unknown kid (a rotation at the platform); default 2 s.
	MinRefresh time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Verifier verifies assertions. Create it with [New]; it is safe for
// concurrent use.
type Verifier struct {
	cfg  Config
	keys *verify.KeyCache[jwk.Set] // the one key cache of oauthd (keys/verify), never using expired keys
}

// New checks cfg and loads the keys once (failing fast on a bad file or
// an unreachable JWKS URL).
func New(ctx context.Context, cfg Config) (*Verifier, error) {
	if cfg.Issuer == "" || cfg.Audience == "" || cfg.Keys == "" {
		return nil, errors.New("handover: Config needs Issuer, Audience and Keys")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second, Transport: verify.TracedTransport("fetch login keys")}
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	if cfg.MinRefresh <= 0 {
		cfg.MinRefresh = 2 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	v := &Verifier{cfg: cfg}
	// Expired keys are never used: while the platform's keys cannot be
	// loaded after they expire, every assertion is refused, so that making
	// the JWKS unreachable cannot keep a key the platform removed alive.
	v.keys = verify.NewKeyCache(verify.KeyCacheConfig[jwk.Set]{
		Load: v.load, MinRefresh: cfg.MinRefresh, MaxAge: cfg.MaxAge, Now: cfg.Now,
	})
	if err := v.keys.Refresh(ctx); err != nil {
		return nil, err
	}
	return v, nil
}

// keysShown is Keys as errors and logs show it: a URL without its
// password and query (either may be the platform's credential).
func (v *Verifier) keysShown() string {
	if !v.isURL() {
		return v.cfg.Keys
	}
	u, err := url.Parse(v.cfg.Keys)
	if err != nil {
		return "the --login-jwks URL"
	}
	hidden := u.RawQuery != ""
	u.RawQuery, u.Fragment = "", ""
	if hidden {
		return u.Redacted() + "?…"
	}
	return u.Redacted()
}

// shownError is a key-loading error as it may be shown: its text without
// the credentials of the JWKS URL (keysShown), its chain unchanged.
type shownError struct {
	err error
	msg string
}

func (e *shownError) Error() string { return e.msg }
func (e *shownError) Unwrap() error { return e.err }

// isURL reports whether Keys is a URL rather than a file.
func (v *Verifier) isURL() bool {
	return strings.HasPrefix(v.cfg.Keys, "https://") || strings.HasPrefix(v.cfg.Keys, "http://")
}

// load reads the key set from the URL or the file, and how long it may
// be used: MaxAge, or less when the response's Cache-Control says so.
// Its errors name the JWKS URL without its credentials (keysShown).
func (v *Verifier) load(ctx context.Context) (jwk.Set, time.Duration, error) {
	set, age, err := v.read(ctx) // read refuses private keys and names kid-less ones
	if err != nil {
		return nil, 0, &shownError{err: err, msg: strings.ReplaceAll(err.Error(), v.cfg.Keys, v.keysShown())}
	}
	return set, age, nil
}

// read fetches and parses the key set.
func (v *Verifier) read(ctx context.Context) (jwk.Set, time.Duration, error) {
	age := v.cfg.MaxAge
	var raw []byte
	if v.isURL() {
		body, cc, err := verify.FetchJWKS(ctx, v.cfg.HTTPClient, v.cfg.Keys)
		if err != nil {
			if ue, ok := errors.AsType[*url.Error](err); ok {
				err = ue.Err // its URL holds the query
			}
			return nil, 0, fmt.Errorf("%w: fetch %s: %v", ErrKeys, v.cfg.Keys, err)
		}
		raw, age = body, verify.CacheAge(cc, age)
	} else {
		var err error
		if raw, err = os.ReadFile(v.cfg.Keys); err != nil {
			return nil, 0, fmt.Errorf("%w: %v", ErrKeys, err)
		}
	}
	pem := bytes.Contains(raw, []byte("-----BEGIN"))
	set, err := jwk.Parse(raw, jwk.WithPEM(pem))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: read %s: %v", ErrKeys, v.cfg.Keys, err)
	}
	for i := range set.Len() {
		k, _ := set.Key(i)
		if verify.IsPrivate(k) {
			return nil, 0, fmt.Errorf("%w: %s holds a private key; give oauthd the public keys only", ErrKeys, v.cfg.Keys)
		}
		// A key without a kid (a PEM file's always) is named by its
		// RFC 7638 thumbprint, so that a platform can sign with one kid
		// whether oauthd reads its JWKS or a PEM file.
		if k.KeyID() == "" {
			if err := jwk.AssignKeyID(k); err != nil {
				return nil, 0, fmt.Errorf("%w: read %s: %v", ErrKeys, v.cfg.Keys, err)
			}
		}
	}
	return set, age, nil
}

// Verify checks token and returns its assertion. The challenge and the
// jti's single use are the caller's to check.
func (v *Verifier) Verify(ctx context.Context, token string) (Assertion, error) {
	if token == "" || len(token) > maxToken {
		return Assertion{}, fmt.Errorf("%w: empty or longer than %d bytes", ErrMalformed, maxToken)
	}
	var c claims
	var keyErr error
	_, err := jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) { return v.keyFor(ctx, t, &keyErr) },
		jwt.WithValidMethods(Algs),
		jwt.WithIssuer(v.cfg.Issuer),
		jwt.WithAudience(v.cfg.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(Leeway),
		jwt.WithTimeFunc(v.cfg.Now),
	)
	if keyErr != nil {
		return Assertion{}, keyErr
	}
	if err != nil {
		return Assertion{}, parseError(err)
	}
	// Strict audience: oauthd's issuer and nothing else.
	if len(c.Audience) != 1 || c.Audience[0] != v.cfg.Audience {
		return Assertion{}, fmt.Errorf("%w: aud must be exactly %q", ErrAudience, v.cfg.Audience)
	}
	if c.IssuedAt == nil {
		return Assertion{}, fmt.Errorf("%w: iat is required", ErrMalformed)
	}
	if life := c.ExpiresAt.Sub(c.IssuedAt.Time); life > MaxLifetime || life <= 0 {
		return Assertion{}, fmt.Errorf("%w: exp - iat is %s; at most %s", ErrLifetime, life, MaxLifetime)
	}
	if c.Subject == "" || len(c.Subject) > 255 || c.ID == "" || len(c.ID) > 255 || c.Challenge == "" {
		return Assertion{}, fmt.Errorf("%w: sub, jti and challenge are required (sub and jti at most 255 bytes)", ErrMalformed)
	}
	return Assertion{
		Issuer: c.Issuer, Subject: c.Subject, Email: c.Email, Name: c.Name, TimeZone: c.TimeZone,
		Challenge: c.Challenge, ID: c.ID, Disabled: c.Disabled,
		IssuedAt: c.IssuedAt.UTC(), ExpiresAt: c.ExpiresAt.UTC(),
	}, nil
}

// keyFor is the platform's public key that verifies t: the one its kid
// names, or the only one when it names none. The keys are loaded again
// when expired (MaxAge, or the JWKS's shorter max-age) or when kid is not
// in the set (the platform rotated its key), at most once per MinRefresh
// either way; when they cannot be had, keyErr is set too (Verify returns
// it as it is).
func (v *Verifier) keyFor(ctx context.Context, t *jwt.Token, keyErr *error) (any, error) {
	kid, _ := t.Header["kid"].(string)
	set, err := v.keys.Get(ctx, func(set jwk.Set) bool {
		_, found := set.LookupKeyID(kid)
		return kid == "" || found
	})
	if err != nil {
		*keyErr = err
		return nil, err
	}
	var key jwk.Key
	switch {
	case kid != "":
		k, ok := set.LookupKeyID(kid)
		if !ok {
			return nil, fmt.Errorf("no key %q at the platform", kid)
		}
		key = k
	case set.Len() == 1:
		key, _ = set.Key(0)
	default:
		return nil, errors.New("the assertion names no kid and the platform has several keys")
	}
	if a := key.Algorithm().String(); a != "" && a != t.Method.Alg() {
		return nil, fmt.Errorf("key %q is for %s, not %s", kid, a, t.Method.Alg())
	}
	var raw any
	if err := key.Raw(&raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// parseError is the error of Verify for an error of the JWT parser.
func parseError(err error) error {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return fmt.Errorf("%w: %v", ErrSignature, err)
	case errors.Is(err, jwt.ErrTokenExpired):
		return fmt.Errorf("%w: %v", ErrExpired, err)
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued), errors.Is(err, jwt.ErrTokenNotValidYet):
		return fmt.Errorf("%w: %v", ErrNotYetValid, err)
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return fmt.Errorf("%w: %v", ErrAudience, err)
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return fmt.Errorf("%w: %v", ErrIssuer, err)
	default:
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
}
