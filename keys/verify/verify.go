package verify

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Sentinel errors. Every error [Verifier.Verify] returns wraps
// ErrInvalidToken; one caused by a kid no key source knows also wraps
// ErrUnknownKey. Test them with errors.Is.
var (
	// ErrInvalidToken: the token is malformed, badly signed, expired, not
	// yet valid, or not an access token of this issuer for this audience.
	// A resource server answers it with 401 and
	// WWW-Authenticate: Bearer error="invalid_token" (RFC 6750 §3.1).
	ErrInvalidToken = errors.New("invalid token")
	// ErrUnknownKey: no published key has the token's kid (it was never
	// published, or it was revoked or pruned).
	ErrUnknownKey = errors.New("unknown signing key")
)

// Algorithms accepted for access tokens (RFC 7518 §3.4, RFC 8037 §3.1,
// RFC 7518 §3.3). Nothing else is ever accepted: no "none", no HMAC.
const (
	ES256 = "ES256"
	EdDSA = "EdDSA"
	RS256 = "RS256"
)

// MaxTokenSize bounds the tokens Verify parses: an oauthd access token is
// well under 1 KiB, and parsing an attacker's megabyte costs memory.
const MaxTokenSize = 8 << 10

// DefaultLeeway is the clock skew allowed on exp, nbf and iat.
const DefaultLeeway = 60 * time.Second

// Config configures a [Verifier].
type Config struct {
	// Issuer is the expected iss (the issuer's base URL). Required.
	Issuer string
	// Audience must be one of the token's aud values. Default: Issuer.
	Audience string
	// Audiences, when not empty, replaces Audience with several: one of
	// them must be one of the token's aud values (a resource server known
	// by more than one identifier, RFC 8707 resources).
	Audiences []string
	// Keys finds the public key for a kid. Required.
	Keys KeySource
	// Leeway is the clock skew allowed on exp, nbf and iat. Default 60s;
	// a negative value means none.
	Leeway time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Revoked, when set, refuses tokens whose grant_id it names (the
	// issuer's revoked-grants feed, [RevocationFeed]): a map lookup per
	// token, no call on the request path. Default: none.
	Revoked RevokedGrants
	// CacheEntries bounds the verified-token cache (see [Verifier.Verify]).
	// Default [DefaultCacheEntries]; a negative value turns the cache off.
	CacheEntries int
	// CacheBytes bounds the memory the cache accounts for (see
	// [CacheStats]). Default [DefaultCacheBytes].
	CacheBytes int
}

// Verifier checks access tokens (RFC 9068 JWTs). It is safe for concurrent
// use.
type Verifier struct {
	keys      KeySource
	validator *jwt.Validator
	revoked   RevokedGrants // nil: no feed
	now       func() time.Time
	leeway    time.Duration
	cache     *tokenCache // nil when off
}

// New returns a Verifier for cfg.
func New(cfg Config) (*Verifier, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("verify: Config.Issuer is required")
	}
	if cfg.Keys == nil {
		return nil, errors.New("verify: Config.Keys is required")
	}
	if cfg.Audience == "" {
		cfg.Audience = cfg.Issuer
	}
	auds := cfg.Audiences
	if len(auds) == 0 {
		auds = []string{cfg.Audience}
	}
	switch {
	case cfg.Leeway == 0:
		cfg.Leeway = DefaultLeeway
	case cfg.Leeway < 0:
		cfg.Leeway = 0
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	// Verify splits and decodes the token itself (see there) and leaves
	// the claim checks to jwt's Validator, so that they stay exactly the
	// library's: exp required, iat checked, iss and aud matched, leeway.
	val := jwt.NewValidator(
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithAudience(auds...),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(cfg.Now),
	)
	v := &Verifier{keys: cfg.Keys, validator: val, now: cfg.Now, leeway: cfg.Leeway, revoked: cfg.Revoked}
	if cfg.CacheEntries == 0 {
		cfg.CacheEntries = DefaultCacheEntries
	}
	if cfg.CacheBytes <= 0 {
		cfg.CacheBytes = DefaultCacheBytes
	}
	if cfg.CacheEntries > 0 {
		v.cache = newTokenCache(cfg.CacheEntries, cfg.CacheBytes)
	}
	return v, nil
}

// tokenClaims is the JSON form of the claims, decoded once per token.
type tokenClaims struct {
	jwt.RegisteredClaims
	ClientID     string      `json:"client_id"`
	GrantID      string      `json:"grant_id"`
	Scope        string      `json:"scope"`
	Unrestricted literalTrue `json:"unrestricted"`
	Cnf          struct {
		JKT string `json:"jkt"`
	} `json:"cnf"`
}

// literalTrue is true only for the JSON literal true. Any other value
// ("true", 1, null, an object) decodes to false without error: a
// verifier grants unrestricted access only on the explicit claim.
type literalTrue bool

func (b *literalTrue) UnmarshalJSON(p []byte) error {
	*b = literalTrue(string(p) == "true")
	return nil
}

// b64 decodes the segments of a token: base64url without padding, and
// strict, so that non-zero trailing bits are refused (otherwise the last
// character of the signature has four spellings that all verify).
var b64 = base64.RawURLEncoding.Strict()

// Verify checks token and returns its claims. Every error wraps
// [ErrInvalidToken] and says briefly why; it never contains the token.
//
// A token that passed every check is remembered, under the SHA-256 of the
// whole token, in a bounded cache: the same token again is answered
// without the signature check, but only while the clock is between its
// iat/nbf (less the leeway) and its exp, and only while the key source
// still gives its kid the key that verified it (a kid that left the JWKS,
// as after `oauthd keys revoke`, is dropped at that lookup). A cached
// answer is therefore never one the full check would refuse. Past exp the
// full check decides, with its leeway. A failed check is never cached.
// The returned Claims are the caller's own (a copy, slices included).
func (v *Verifier) Verify(ctx context.Context, token string) (*Claims, error) {
	if v.cache == nil || len(token) > MaxTokenSize {
		return v.verify(ctx, token, nil)
	}
	k := tokenKey(token)
	if c, ok := v.cache.get(ctx, &k, v.now(), v.keys); ok {
		// The cache holds what the signature and claims checks decided;
		// a grant revoked since then is refused here, on every request.
		if err := v.CheckGrant(c.GrantID); err != nil {
			return nil, err
		}
		return c, nil
	}
	var used usedKey
	c, err := v.verify(ctx, token, &used)
	if err != nil {
		return nil, err
	}
	v.cache.put(&k, c, used.kid, used.alg, used.pub, v.leeway, v.now())
	return c, nil
}

// DropCached removes from the cache every token whose claims match, and
// returns how many it removed. Neither a revoked grant (Config.Revoked is
// checked on every hit) nor a revoked key (an entry whose key is no longer
// published is never served) needs a call.
func (v *Verifier) DropCached(match func(*Claims) bool) int {
	if v.cache == nil {
		return 0
	}
	return v.cache.drop(match)
}

// CacheStats reports on the verified-token cache (zero when it is off).
func (v *Verifier) CacheStats() CacheStats {
	if v.cache == nil {
		return CacheStats{}
	}
	return v.cache.stats()
}

// usedKey is the key a successful verification used.
type usedKey struct {
	kid, alg string
	pub      crypto.PublicKey
}

// verify is Verify without the cache; when used is not nil it receives
// the key that verified the token.
//
// The order of the checks: size, alphabet, exactly three segments, header
// (strict base64url, JSON object, alg one of [Algs], typ at+jwt, kid),
// key lookup, alg equal to the key's alg and key of the right type,
// signature, and only then the claims (JSON, exp, nbf, iat, iss, aud).
// A forged token therefore costs no claim decoding.
func (v *Verifier) verify(ctx context.Context, token string, used *usedKey) (*Claims, error) {
	if len(token) > MaxTokenSize {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrInvalidToken, MaxTokenSize)
	}
	if !compactJWS(token) {
		return nil, fmt.Errorf("%w: malformed", ErrInvalidToken)
	}
	// Exactly three segments: header.payload.signature.
	d1 := strings.IndexByte(token, '.')
	if d1 < 0 {
		return nil, fmt.Errorf("%w: malformed", ErrInvalidToken)
	}
	d2 := d1 + 1 + strings.IndexByte(token[d1+1:], '.')
	if d2 <= d1 || strings.IndexByte(token[d2+1:], '.') >= 0 {
		return nil, fmt.Errorf("%w: malformed", ErrInvalidToken)
	}
	hdrBytes, err := b64.DecodeString(token[:d1])
	if err != nil {
		return nil, fmt.Errorf("%w: malformed", ErrInvalidToken)
	}
	h, ok := parseHeader(hdrBytes)
	if !ok {
		return nil, fmt.Errorf("%w: malformed", ErrInvalidToken)
	}
	method, err := h.method()
	if err != nil {
		return nil, err
	}
	pub, err := v.key(ctx, h, method)
	if err != nil {
		return nil, err
	}
	if used != nil {
		*used = usedKey{kid: h.kid, alg: method.Alg(), pub: pub}
	}
	sig, err := b64.DecodeString(token[d2+1:])
	if err != nil {
		return nil, fmt.Errorf("%w: malformed", ErrInvalidToken)
	}
	if method == jwt.SigningMethodES256 && highS(sig) {
		return nil, fmt.Errorf("%w: bad signature or unaccepted alg (ES256 with a high S)", ErrInvalidToken)
	}
	if err := method.Verify(token[:d2], sig, pub); err != nil {
		return nil, fmt.Errorf("%w: bad signature or unaccepted alg", ErrInvalidToken)
	}
	payload, err := b64.DecodeString(token[d1+1 : d2])
	if err != nil {
		return nil, fmt.Errorf("%w: malformed", ErrInvalidToken)
	}
	var tc tokenClaims
	if err := json.Unmarshal(payload, &tc); err != nil {
		return nil, fmt.Errorf("%w: malformed", ErrInvalidToken)
	}
	if err := v.validator.Validate(&tc); err != nil {
		return nil, reason(err)
	}
	if err := v.CheckGrant(tc.GrantID); err != nil {
		return nil, err
	}
	c := &Claims{
		Issuer:       tc.Issuer,
		Subject:      tc.Subject,
		Audience:     []string(tc.Audience),
		ClientID:     tc.ClientID,
		Scopes:       strings.Fields(tc.Scope),
		Unrestricted: bool(tc.Unrestricted),
		ID:           tc.ID,
		GrantID:      tc.GrantID,
		JKT:          tc.Cnf.JKT,
	}
	if tc.IssuedAt != nil {
		c.IssuedAt = tc.IssuedAt.Time
	}
	if tc.ExpiresAt != nil {
		c.ExpiresAt = tc.ExpiresAt.Time
	}
	if tc.NotBefore != nil {
		c.NotBefore = tc.NotBefore.Time
	}
	return c, nil
}

// CheckGrant applies Config.Revoked to a verified token's grant_id; every
// path that accepts a token (a cache of verified tokens included) must
// call it on each request, so that a grant revoked after its tokens were
// verified is refused from the feed's next fetch on. A token without
// grant_id (minted before the claim existed) has nothing to check.
func (v *Verifier) CheckGrant(grantID string) error {
	if v.revoked == nil || grantID == "" {
		return nil
	}
	if err := v.revoked.CheckGrant(grantID); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidToken, &GrantError{GrantID: grantID, Err: err})
	}
	return nil
}

// GrantError is a token refused for its grant (Config.Revoked): Err is
// [ErrGrantRevoked] or [ErrFeedStale]. [Verifier.Verify]'s error wraps it,
// so that a caller can say (and log once) which grant.
type GrantError struct {
	GrantID string
	Err     error
}

func (e *GrantError) Error() string { return "grant " + e.GrantID + ": " + e.Err.Error() }
func (e *GrantError) Unwrap() error { return e.Err }

// p256HalfN is ⌊n/2⌋ for the order n of P-256, big-endian.
var p256HalfN = [32]byte{
	0x7f, 0xff, 0xff, 0xff, 0x80, 0x00, 0x00, 0x00, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	0xde, 0x73, 0x7d, 0x56, 0xd3, 0x8b, 0xcf, 0x42, 0x79, 0xdc, 0xe5, 0x61, 0x7e, 0x31, 0x92, 0xa8,
}

// highS reports whether the ES256 signature R||S has S > n/2. For every
// valid ECDSA signature (r, s), (r, n − s) is valid too; accepting only
// the low S gives a token one valid spelling (no malleable tokens, as
// Bitcoin's BIP 62 and libsecp256k1 do). Our signer (keys) always makes
// the low one. A signature of the wrong length is left to the verifier.
func highS(sig []byte) bool {
	return len(sig) == 64 && bytes.Compare(sig[32:], p256HalfN[:]) > 0
}

// compactJWS reports whether token uses only the characters of a compact
// JWS (base64url and dots). Go's base64 decoder skips CR and LF, so
// without this check "token\n" would verify as well as "token": a token
// has exactly one accepted spelling.
func compactJWS(token string) bool {
	for i := 0; i < len(token); i++ {
		switch c := token[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// method returns the signing method of the header's alg, which must be
// one of [Algs]: never "none", never HMAC.
func (h *header) method() (jwt.SigningMethod, error) {
	if !h.hasAlg {
		return nil, fmt.Errorf("%w: unverifiable", ErrInvalidToken)
	}
	switch h.alg {
	case ES256:
		return jwt.SigningMethodES256, nil
	case EdDSA:
		return jwt.SigningMethodEdDSA, nil
	case RS256:
		return jwt.SigningMethodRS256, nil
	}
	return nil, fmt.Errorf("%w: bad signature or unaccepted alg", ErrInvalidToken)
}

// key applies the RFC 9068 §4 typ check, looks up the kid, and enforces
// the rule that the token's alg must be the key's alg (no algorithm
// confusion) and the key of the kind that alg needs.
func (v *Verifier) key(ctx context.Context, h header, method jwt.SigningMethod) (crypto.PublicKey, error) {
	if !strings.EqualFold(h.typ, "at+jwt") && !strings.EqualFold(h.typ, "application/at+jwt") {
		return nil, fmt.Errorf("%w: typ is not at+jwt", ErrInvalidToken)
	}
	if h.kid == "" {
		return nil, fmt.Errorf("%w: no kid", ErrInvalidToken)
	}
	pub, alg, err := v.keys.Key(ctx, h.kid)
	if err != nil {
		if errors.Is(err, ErrUnknownKey) {
			return nil, fmt.Errorf("%w: unknown kid: %w", ErrInvalidToken, ErrUnknownKey)
		}
		return nil, fmt.Errorf("%w: key lookup: %w", ErrInvalidToken, err)
	}
	if method.Alg() != alg {
		return nil, fmt.Errorf("%w: alg %s does not match the key's alg", ErrInvalidToken, method.Alg())
	}
	if err := checkKeyType(pub, alg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	return pub, nil
}

// minRSABits is the smallest RSA modulus accepted, for every alg.
const minRSABits = 2048

// checkKeyType reports whether pub is a key of the kind alg needs: the
// one rule for a token's key, a feed's and a client assertion's.
func checkKeyType(pub crypto.PublicKey, alg string) error {
	switch alg {
	case ES256:
		if k, ok := pub.(*ecdsa.PublicKey); ok && k.Curve == elliptic.P256() {
			return nil
		}
	case "ES384":
		if k, ok := pub.(*ecdsa.PublicKey); ok && k.Curve == elliptic.P384() {
			return nil
		}
	case EdDSA:
		if k, ok := pub.(ed25519.PublicKey); ok && len(k) == ed25519.PublicKeySize {
			return nil
		}
	case RS256, "PS256":
		if k, ok := pub.(*rsa.PublicKey); ok && k.N.BitLen() >= minRSABits {
			return nil
		}
	default:
		return fmt.Errorf("key alg %q is not accepted", alg)
	}
	return fmt.Errorf("key is not a valid %s key", alg)
}

// reason turns a jwt validator error into a short ErrInvalidToken error.
func reason(err error) error {
	var why string
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		why = "malformed"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		why = "bad signature or unaccepted alg"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		why = "required claim missing"
	case errors.Is(err, jwt.ErrTokenExpired):
		why = "expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		why = "not valid yet"
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		why = "issued in the future"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		why = "wrong issuer"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		why = "wrong audience"
	case errors.Is(err, jwt.ErrTokenInvalidClaims):
		why = "invalid claims"
	default:
		why = "unverifiable"
	}
	return fmt.Errorf("%w: %s", ErrInvalidToken, why)
}
