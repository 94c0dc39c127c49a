package handover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/lestrrat-go/httpcc"
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
	cfg Config

	mu      sync.Mutex
	set     jwk.Set
	expires time.Time // when the set in use must be fetched again
	tried   time.Time // the last load, successful or not
	lastErr error     // of the last load
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
	if _, err := v.keys(ctx, "", true); err != nil {
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
func (v *Verifier) load(ctx context.Context) (jwk.Set, time.Duration, error) {
	return v.read(ctx) // read refuses private keys and names kid-less ones
}

// cacheAge is how long a response with Cache-Control cc may be used,
// at most limit: its max-age, 0 for no-store or no-cache, limit when it
// says neither (or cannot be read). Parsed by lestrrat-go/httpcc, the
// parser jwx's own cache uses.
func cacheAge(cc string, limit time.Duration) time.Duration {
	if cc == "" {
		return limit
	}
	ds, err := httpcc.ParseResponseDirectives(cc)
	if err != nil {
		return limit
	}
	age := limit
	for _, d := range ds {
		switch strings.ToLower(d.Name) {
		case httpcc.NoStore, httpcc.NoCache:
			return 0
		case httpcc.MaxAge:
			if s, err := strconv.ParseUint(d.Value, 10, 32); err == nil && time.Duration(s)*time.Second < age {
				age = time.Duration(s) * time.Second
			}
		}
	}
	return age
}

// read fetches and parses the key set.
func (v *Verifier) read(ctx context.Context) (jwk.Set, time.Duration, error) {
	age := v.cfg.MaxAge
	var raw []byte
	if v.isURL() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.Keys, nil)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %s is not a valid URL", ErrKeys, v.keysShown())
		}
		resp, err := v.cfg.HTTPClient.Do(req)
		if err != nil {
			if ue, ok := errors.AsType[*url.Error](err); ok {
				err = ue.Err // its URL holds the query
			}
			return nil, 0, fmt.Errorf("%w: fetch %s: %v", ErrKeys, v.cfg.Keys, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, 0, fmt.Errorf("%w: fetch %s: %s", ErrKeys, v.cfg.Keys, resp.Status)
		}
		if raw, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20)); err != nil {
			return nil, 0, fmt.Errorf("%w: fetch %s: %v", ErrKeys, v.cfg.Keys, err)
		}
		age = cacheAge(resp.Header.Get("Cache-Control"), age)
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
		if isPrivate(k) {
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

// isPrivate reports whether k is a private key.
func isPrivate(k jwk.Key) bool {
	switch k.(type) {
	case jwk.ECDSAPrivateKey, jwk.RSAPrivateKey, jwk.OKPPrivateKey, jwk.SymmetricKey:
		return true
	}
	return false
}

// keys returns the key set, fetched again when it has expired (MaxAge, or
// the JWKS's shorter max-age), or when kid is not in it (the platform
// rotated its key), at most once per MinRefresh either way; or when force.
// Expired keys are never used: while the platform's keys cannot be
// fetched after they expire, every assertion is refused, so that making
// the JWKS unreachable cannot keep a key the platform removed alive.
func (v *Verifier) keys(ctx context.Context, kid string, force bool) (jwk.Set, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.cfg.Now()
	expired := v.set == nil || !now.Before(v.expires)
	unknown := false
	if !expired && kid != "" {
		_, found := v.set.LookupKeyID(kid)
		unknown = !found
	}
	if !force && !expired && !unknown {
		return v.set, nil
	}
	// At most one load per MinRefresh, failed ones included: made-up kids,
	// or a platform that is down, cannot make every verification wait on
	// a fetch.
	if !force && v.set != nil && now.Sub(v.tried) < v.cfg.MinRefresh {
		if v.lastErr != nil && expired {
			return nil, v.lastErr
		}
		return v.set, nil
	}
	v.tried = now
	set, age, err := v.load(ctx)
	if err != nil {
		err = &shownError{err: err, msg: strings.ReplaceAll(err.Error(), v.cfg.Keys, v.keysShown())}
	}
	v.lastErr = err
	if err != nil {
		if v.set != nil && !force && !expired {
			return v.set, nil // an unknown kid: keep the keys that have not expired
		}
		return nil, err
	}
	v.set, v.expires = set, now.Add(age)
	return set, nil
}

// Verify checks token and returns its assertion. The challenge and the
// jti's single use are the caller's to check.
func (v *Verifier) Verify(ctx context.Context, token string) (Assertion, error) {
	if token == "" || len(token) > maxToken {
		return Assertion{}, fmt.Errorf("%w: empty or longer than %d bytes", ErrMalformed, maxToken)
	}
	var c claims
	var keyErr error
	_, err := jwt.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		set, err := v.keys(ctx, kid, false)
		if err != nil {
			keyErr = err
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
	},
		jwt.WithValidMethods(Algs),
		jwt.WithIssuer(v.cfg.Issuer),
		jwt.WithAudience(v.cfg.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(Leeway),
		jwt.WithTimeFunc(v.cfg.Now),
	)
	switch {
	case err == nil:
	case keyErr != nil:
		return Assertion{}, keyErr
	case errors.Is(err, jwt.ErrTokenMalformed):
		return Assertion{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return Assertion{}, fmt.Errorf("%w: %v", ErrSignature, err)
	case errors.Is(err, jwt.ErrTokenExpired):
		return Assertion{}, fmt.Errorf("%w: %v", ErrExpired, err)
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued), errors.Is(err, jwt.ErrTokenNotValidYet):
		return Assertion{}, fmt.Errorf("%w: %v", ErrNotYetValid, err)
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return Assertion{}, fmt.Errorf("%w: %v", ErrAudience, err)
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return Assertion{}, fmt.Errorf("%w: %v", ErrIssuer, err)
	default:
		return Assertion{}, fmt.Errorf("%w: %v", ErrMalformed, err)
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
