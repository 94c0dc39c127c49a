package verify

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"

	"oauthd/data"
)

// DPoP proofs (RFC 9449). The JWS parsing, the embedded jwk and its
// RFC 7638 thumbprint are lestrrat-go/jwx's; the rules of §4.3 are here.

var (
	// ErrInvalidProof: the DPoP proof is missing, malformed, badly signed,
	// for another request, outside the iat window, or replayed. A resource
	// server answers it with 401 and WWW-Authenticate: DPoP
	// error="invalid_dpop_proof"; the token endpoint with 400
	// invalid_dpop_proof (RFC 9449 §7.1, §5).
	ErrInvalidProof = errors.New("invalid DPoP proof")
	// ErrReplayCacheFull: the in-memory replay cache holds its maximum of
	// live jti values; the proof is refused rather than accepted unchecked.
	ErrReplayCacheFull = errors.New("DPoP replay cache full")
)

// DPoPAlgs are the proof algorithms accepted (metadata
// dpop_signing_alg_values_supported, and the algs of a DPoP challenge).
func DPoPAlgs() []string { return []string{ES256, EdDSA, "Ed25519"} }

// DPoPChallengeAlgs is DPoPAlgs joined with spaces, for WWW-Authenticate.
const DPoPChallengeAlgs = "ES256 EdDSA Ed25519"

// DefaultDPoPWindow is how far a proof's iat may be from now, either way.
const DefaultDPoPWindow = 60 * time.Second

// Bounds of a configured DPoP window (serve's and gateway's --dpop-window):
// narrower refuses honest clients whose clock is a little off, wider keeps
// a stolen proof usable for too long (RFC 9449 §11.1).
const (
	MinDPoPWindow = 5 * time.Second
	MaxDPoPWindow = 10 * time.Minute
)

// MaxProofSize bounds the proofs parsed.
const MaxProofSize = 4 << 10

// NonceStore records one-time values; [data.Store] is one (shared by the
// replicas), [NewMemoryNonces] another (one process). UseNonce returns an
// error wrapping [data.ErrExists] for a key already used.
type NonceStore interface {
	UseNonce(ctx context.Context, key []byte, expires time.Time) error
}

// DPoPConfig configures a [DPoP] checker.
type DPoPConfig struct {
	// Window is how far iat may be from now, either way. Default
	// DefaultDPoPWindow.
	Window time.Duration
	// Nonces remembers the jti values seen, for the window. Default: a
	// [NewMemoryNonces] of DefaultMemoryNonces entries, which protects one
	// process only.
	Nonces NonceStore
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// DPoP checks DPoP proofs. Safe for concurrent use.
type DPoP struct {
	window time.Duration
	nonces NonceStore
	now    func() time.Time
}

// NewDPoP returns a checker for cfg.
func NewDPoP(cfg DPoPConfig) *DPoP {
	if cfg.Window <= 0 {
		cfg.Window = DefaultDPoPWindow
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Nonces == nil {
		cfg.Nonces = NewMemoryNonces(DefaultMemoryNonces, cfg.Now)
	}
	return &DPoP{window: cfg.Window, nonces: cfg.Nonces, now: cfg.Now}
}

// Window returns the iat window.
func (d *DPoP) Window() time.Duration { return d.window }

type proofClaims struct {
	JTI   string          `json:"jti"`
	HTM   string          `json:"htm"`
	HTU   string          `json:"htu"`
	IAT   json.Number     `json:"iat"`
	ATH   *string         `json:"ath"`
	Nonce json.RawMessage `json:"nonce"`
}

// Check verifies the DPoP proof for a request with method to htu (the
// URL the client called; query and fragment are ignored) and returns the
// thumbprint (RFC 7638, base64url SHA-256) of its key. accessToken is the
// token the request presents ("" at the token endpoint): the proof's ath
// must then be its hash. The jti is recorded as used in the checker's
// NonceStore; a second Check of the same proof fails. Errors wrap
// [ErrInvalidProof], except a failure of the nonce store, which is the
// server's. It is [DPoP.Verify] then [Proof.Spend].
func (d *DPoP) Check(ctx context.Context, proof, method, htu, accessToken string) (string, error) {
	p, err := d.Verify(proof, method, htu, accessToken)
	if err != nil {
		return "", err
	}
	if err := p.Spend(ctx, d.nonces); err != nil {
		return "", err
	}
	return p.JKT, nil
}

// Proof is a DPoP proof that passed every check of [DPoP.Verify]; its jti
// is not spent yet.
type Proof struct {
	// JKT is the RFC 7638 thumbprint (base64url SHA-256) of its key.
	JKT string
	// ReplayKey is the one-time value that stands for its jti (per key),
	// for a [NonceStore].
	ReplayKey []byte
	// Expires is when the proof stops being acceptable (iat + window):
	// how long its jti must be remembered.
	Expires time.Time
}

// Spend records p's jti in nonces. A jti already recorded is an error
// wrapping [ErrInvalidProof] ("replayed"); so is a full in-memory cache
// ([ErrReplayCacheFull]), which refuses rather than forgets. Any other
// error is the store's.
func (p Proof) Spend(ctx context.Context, nonces NonceStore) error {
	switch err := nonces.UseNonce(ctx, p.ReplayKey, p.Expires); {
	case err == nil:
		return nil
	case errors.Is(err, data.ErrExists):
		return fmt.Errorf("%w: replayed (jti already used)", ErrInvalidProof)
	case errors.Is(err, ErrReplayCacheFull):
		return fmt.Errorf("%w: replay cache full, try again", ErrInvalidProof)
	default:
		return fmt.Errorf("dpop: record jti: %w", err)
	}
}

// Verify checks the DPoP proof like [DPoP.Check] but does not spend its
// jti: the caller records p.ReplayKey where and when it decides (the token
// endpoint first in a local cache, and durably only once the client and
// the grant have passed, so that nothing an unauthenticated caller sends
// is stored). Errors wrap [ErrInvalidProof].
func (d *DPoP) Verify(proof, method, htu, accessToken string) (Proof, error) {
	bad := func(why string) (Proof, error) { return Proof{}, fmt.Errorf("%w: %s", ErrInvalidProof, why) }
	if proof == "" {
		return bad("missing")
	}
	if len(proof) > MaxProofSize || !compactJWS(proof) || strings.Count(proof, ".") != 2 {
		return bad("malformed")
	}
	msg, err := jws.ParseString(proof)
	if err != nil || len(msg.Signatures()) != 1 {
		return bad("malformed")
	}
	alg, key, raw, why := proofKey(msg.Signatures()[0].ProtectedHeaders())
	if why != "" {
		return bad(why)
	}
	if why := checkProofSignature(proof, alg, raw); why != "" {
		return bad(why)
	}
	var c proofClaims
	dec := json.NewDecoder(strings.NewReader(string(msg.Payload())))
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil {
		return bad("malformed claims")
	}
	iat, why, err := d.checkProofClaims(c, method, htu, accessToken)
	if err != nil {
		return Proof{}, err
	}
	if why != "" {
		return bad(why)
	}
	tp, err := key.Thumbprint(crypto.SHA256)
	if err != nil {
		return bad("unusable jwk")
	}
	jkt := base64.RawURLEncoding.EncodeToString(tp)
	// The jti is remembered per key for as long as the proof is
	// acceptable (its iat plus the window).
	nk := sha256.Sum256([]byte("dpop-jti\x00" + jkt + "\x00" + c.JTI))
	return Proof{JKT: jkt, ReplayKey: nk[:], Expires: iat.Add(d.window)}, nil
}

// proofKey checks a proof's protected header (typ, alg, crit, jwk) and
// returns its algorithm and public key, or why it is refused.
func proofKey(h jws.Headers) (alg jwa.SignatureAlgorithm, key jwk.Key, raw any, why string) {
	if h.Type() != "dpop+jwt" {
		return "", nil, nil, "typ is not dpop+jwt"
	}
	alg = h.Algorithm()
	if alg == "Ed25519" {
		// RFC 9864's fully-specified name for EdDSA with Ed25519 (what
		// WebCrypto clients such as oauth4webapi send): the same algorithm.
		alg = jwa.EdDSA
	}
	if alg != jwa.ES256 && alg != jwa.EdDSA {
		return "", nil, nil, "alg must be ES256 or EdDSA, not " + strconv.Quote(alg.String())
	}
	if len(h.Critical()) > 0 {
		return "", nil, nil, "crit is not understood"
	}
	key = h.JWK()
	if key == nil {
		return "", nil, nil, "no jwk header"
	}
	if err := key.Raw(&raw); err != nil {
		return "", nil, nil, "unusable jwk"
	}
	switch k := raw.(type) {
	case *ecdsa.PublicKey:
		if alg != jwa.ES256 || k.Curve != elliptic.P256() {
			return "", nil, nil, "jwk does not match alg"
		}
	case ed25519.PublicKey:
		if alg != jwa.EdDSA {
			return "", nil, nil, "jwk does not match alg"
		}
	default: // a private key, a symmetric key, RSA, …
		return "", nil, nil, "jwk must be a public EC P-256 or Ed25519 key"
	}
	return alg, key, raw, ""
}

// checkProofSignature verifies the signature over the compact form as
// received (jwx parsed the header; verifying here avoids parsing the
// proof and its jwk again), or says why it is refused.
func checkProofSignature(proof string, alg jwa.SignatureAlgorithm, raw any) string {
	dot := strings.LastIndexByte(proof, '.')
	sig, err := b64.DecodeString(proof[dot+1:])
	if err != nil {
		return "malformed"
	}
	sm := jwt.SigningMethod(jwt.SigningMethodES256)
	if alg == jwa.EdDSA {
		sm = jwt.SigningMethodEdDSA
	}
	if err := sm.Verify(proof[:dot], sig, raw); err != nil {
		return "bad signature"
	}
	return ""
}

// checkProofClaims checks a proof's claims against the request (jti, htm,
// htu, iat within the window, ath) and returns its iat, or why it is
// refused; err is a bad request URL, the caller's fault.
func (d *DPoP) checkProofClaims(c proofClaims, method, htu, accessToken string) (iat time.Time, why string, err error) {
	if c.JTI == "" || len(c.JTI) > 256 {
		return time.Time{}, "jti missing or too long", nil
	}
	if c.HTM != method {
		return time.Time{}, "htm does not match the request method", nil
	}
	want, err := NormalizeHTU(htu)
	if err != nil {
		return time.Time{}, "", fmt.Errorf("dpop: the request URL %q: %w", htu, err)
	}
	if got, err := NormalizeHTU(c.HTU); err != nil || got != want {
		return time.Time{}, "htu does not match the request URL", nil
	}
	iatF, err := c.IAT.Float64()
	if err != nil {
		return time.Time{}, "iat missing", nil
	}
	iat = time.Unix(int64(iatF), 0)
	now := d.now()
	if iat.Before(now.Add(-d.window)) || iat.After(now.Add(d.window)) {
		return time.Time{}, "iat is outside the accepted window", nil
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		ath := base64.RawURLEncoding.EncodeToString(sum[:])
		if c.ATH == nil || subtle.ConstantTimeCompare([]byte(*c.ATH), []byte(ath)) != 1 {
			return time.Time{}, "ath does not match the access token", nil
		}
	}
	return iat, "", nil
}

// NormalizeHTU returns u without query and fragment, normalised as RFC
// 9449 §4.3 asks (RFC 3986 §6.2.2 and §6.2.3): lower-case scheme and host,
// no default port, "/" for an empty path, percent-encoding in one
// canonical form. Only absolute http and https URLs are accepted.
func NormalizeHTU(u string) (string, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	scheme := strings.ToLower(p.Scheme)
	if (scheme != "https" && scheme != "http") || p.Host == "" || p.User != nil {
		return "", errors.New("not an absolute http(s) URL")
	}
	host := strings.ToLower(p.Hostname())
	port := p.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	path := (&url.URL{Path: p.Path}).EscapedPath()
	if path == "" {
		path = "/"
	}
	return scheme + "://" + host + path, nil
}

// DefaultMemoryNonces is the capacity of the default in-memory replay
// cache: enough for about 4 000 DPoP requests a second with the default
// window, at about 100 bytes an entry.
const DefaultMemoryNonces = 1 << 20

// MemoryNonces is a bounded in-memory [NonceStore] for one process (a
// resource server verifying offline has no shared store): a proof
// replayed to another process, or after a restart, is not detected; each
// process still sees each jti once. Entries leave when they expire; when
// it holds max live entries it refuses new ones (with
// [ErrReplayCacheFull]) rather than forget live ones.
type MemoryNonces struct {
	mu    sync.Mutex
	max   int
	evict bool // when full, forget the oldest entry instead of refusing
	now   func() time.Time
	m     map[[32]byte]time.Time
	fifo  []nonceEntry // in order of insertion; expiry is not monotonic, so it is a sweep hint
}

type nonceEntry struct {
	key [32]byte
	exp time.Time
}

// NewMemoryNonces returns an empty cache of at most max entries.
func NewMemoryNonces(max int, now func() time.Time) *MemoryNonces {
	if now == nil {
		now = time.Now
	}
	return &MemoryNonces{max: max, now: now, m: make(map[[32]byte]time.Time)}
}

// NewMemoryNoncesFilter returns an empty cache of at most max entries
// that, when full, forgets its oldest entry to make room (never refusing,
// in O(1)): for a cache that only filters before a check that decides
// (the token endpoint's, before the store). A flood then costs no scan
// and refuses nobody; a forgotten jti is caught by the check behind it.
func NewMemoryNoncesFilter(max int, now func() time.Time) *MemoryNonces {
	n := NewMemoryNonces(max, now)
	n.evict = true
	return n
}

// UseNonce implements [NonceStore].
func (n *MemoryNonces) UseNonce(_ context.Context, key []byte, expires time.Time) error {
	k := sha256.Sum256(key)
	now := n.now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if exp, ok := n.m[k]; ok && !exp.Before(now) {
		return fmt.Errorf("use nonce: %w", data.ErrExists)
	}
	// Drop expired entries from the front; a live one at the front stops
	// the sweep (entries behind it are swept on later calls or when full).
	for len(n.fifo) > 0 && n.fifo[0].exp.Before(now) {
		e := n.fifo[0]
		if exp, ok := n.m[e.key]; ok && exp.Equal(e.exp) {
			delete(n.m, e.key)
		}
		n.fifo = n.fifo[1:]
	}
	for n.evict && len(n.m) >= n.max && len(n.fifo) > 0 {
		e := n.fifo[0]
		if exp, ok := n.m[e.key]; ok && exp.Equal(e.exp) {
			delete(n.m, e.key)
		}
		n.fifo = n.fifo[1:]
	}
	if len(n.m) >= n.max {
		n.compact(now)
		if len(n.m) >= n.max {
			return ErrReplayCacheFull
		}
	}
	n.m[k] = expires
	n.fifo = append(n.fifo, nonceEntry{key: k, exp: expires})
	return nil
}

// compact removes every expired entry.
func (n *MemoryNonces) compact(now time.Time) {
	live := n.fifo[:0]
	for _, e := range n.fifo {
		if exp, ok := n.m[e.key]; ok && exp.Equal(e.exp) {
			if e.exp.Before(now) {
				delete(n.m, e.key)
				continue
			}
			live = append(live, e)
		}
	}
	n.fifo = live
}

// Len returns the number of entries held.
func (n *MemoryNonces) Len() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.m)
}
