package issuer

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"oauthd/data"
	"oauthd/data/netsafe"
	"oauthd/issuer/throttle"
	"oauthd/keys/verify"
)

// Signer signs access tokens with the active key; *keys.Manager is one.
type Signer interface {
	Sign(claims SignClaims) (string, error)
}

// SignClaims is the [Signer]'s contract with the claims it signs: JWT
// claims that append their own JSON object to dst, as encoding/json would
// encode them, without reflection (the token endpoint's hot path). It is
// the same type as keys.Claims (both alias this interface literal), so
// *keys.Manager is a Signer while issuer does not import keys; a claims
// type without AppendJSON does not compile as an argument to Sign.
type SignClaims = interface {
	jwt.Claims
	AppendJSON(dst []byte) []byte
}

// TokenVerifier verifies access tokens (for introspection); *verify.Verifier is one.
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (*verify.Claims, error)
}

// Config configures a [Server]. Zero durations take the defaults shown.
type Config struct {
	// Store is what the endpoints read and write ([Store]); any
	// data.Store is one. Required.
	Store    Store
	Signer   Signer
	Verifier TokenVerifier
	// MeAuth is the middleware that guards /v2/me (the route table's
	// PROFILE_READ rule); it puts the verified claims in the request context
	// (guard.ClaimsFrom). Required.
	MeAuth echo.MiddlewareFunc
	// UserinfoAuth guards the userinfo endpoint like MeAuth guards
	// /v2/me, with the table of [UserinfoTable] (the openid scope);
	// default MeAuth.
	UserinfoAuth echo.MiddlewareFunc
	// Fetcher fetches clients' jwks_uri documents; default
	// netsafe.New(netsafe.Options{}) (https, public addresses only).
	Fetcher *netsafe.Client
	Logger  *slog.Logger     // default: discard
	Now     func() time.Time // default: time.Now
	// Registerer receives the issuer's Prometheus metrics; nil means none.
	Registerer prometheus.Registerer

	Issuer   string // base URL, the iss of tokens and of authorization responses. Required.
	AppURL   string // where the consent pages live; default Issuer
	Audience string // aud of access tokens without resources; default Issuer
	// Resources are the APIs (absolute URIs) tokens may be bound to with
	// RFC 8707 resource indicators (resource.go); an access token of a
	// grant with resources has them as its aud. Default none: a resource
	// parameter is invalid_target.
	Resources []string

	AccessTTL   time.Duration // default 30 min (the seed's 1800 s)
	CodeTTL     time.Duration // default DefaultCodeTTL (60 s); at most MaxCodeTTL (10 min)
	RefreshIdle time.Duration // default DefaultRefreshIdle (30 days), renewed by each rotation
	RefreshMax  time.Duration // default DefaultRefreshMax (365 days) from the authorization

	// RefreshTokenKey ([data.RefreshKeySize] bytes) tags refresh tokens
	// ([data.NewRefreshToken]); serve passes keys.Manager.RefreshTokenKey,
	// the same on every replica and after restarts. Nil makes a random
	// key for this Server only (tests): its refresh tokens are refused as
	// forged by any other Server.
	RefreshTokenKey []byte
	// RefreshReuseGrace: within it after a rotation, the immediately
	// previous refresh token may be presented once more (a lost response)
	// and rotates the family again instead of revoking it. 0 disables it
	// (the default here; serve's default is DefaultRefreshReuseGrace).
	RefreshReuseGrace time.Duration
	// Throttle, when set, shares the failed client authentications'
	// counts with every replica that has the same (issuer/throttle.Shared);
	// nil counts them in this process.
	Throttle *throttle.Shared

	// Outage is told of every request answered 503 because the store was
	// unavailable (outage.go). Default nil: the 503s are not logged.
	Outage *Outage
	// DPoPWindow is how far a DPoP proof's iat may be from now, either
	// way (RFC 9449 §11.1). Default verify.DefaultDPoPWindow (60 s).
	DPoPWindow time.Duration

	// IDSigner signs OpenID Connect ID tokens; default Signer when it is
	// an IDTokenSigner (*keys.Manager is). Without one a grant with
	// openid fails at the token endpoint.
	IDSigner IDTokenSigner
	// Keys are the published keys that verify an id_token_hint; default
	// Signer when it is a verify.KeySource (*keys.Manager is). Without
	// them every id_token_hint is invalid.
	Keys verify.KeySource
	// IDTokenTTL is the lifetime of ID tokens; default AccessTTL.
	IDTokenTTL time.Duration

	// Client ID metadata documents (clientmeta.go).

	// MetadataPrivateNetworks lets documents be fetched from loopback and
	// private addresses (serve --client-metadata-private-networks).
	MetadataPrivateNetworks bool
	// MetadataFetcher fetches the documents; default a netsafe.Client
	// with MetadataPrivateNetworks (tests give one with their TLS roots).
	MetadataFetcher *netsafe.Client
	// MetadataMinTTL and MetadataMaxTTL bound how long a document is
	// cached, whatever its Cache-Control says; defaults
	// DefaultMetadataMinTTL and DefaultMetadataMaxTTL.
	MetadataMinTTL, MetadataMaxTTL time.Duration
	// DeviceCodeMax caps a client's outstanding device codes (RFC 8628,
	// device.go); default DefaultDeviceCodeMax.
	DeviceCodeMax int
}

// Server is the authorization server. Create it with [New].
type Server struct {
	cfg     Config
	store   Store
	log     *slog.Logger
	now     func() time.Time
	metrics *metrics
	tok     *tokenState // token side: limiter, metadata (token.go)

	refreshKey []byte               // Config.RefreshTokenKey
	tagger     *data.RefreshTagger  // tags refresh tokens under refreshKey
	grace      time.Duration        // Config.RefreshReuseGrace
	dpop       *verify.DPoP         // token endpoint proofs (dpop.go)
	jtis       *verify.MemoryNonces // their jti, spent first in memory (dpop.go)
	par        *parState            // pushed authorization requests: sealing, limits, first uses (par.go)
	cors       *corsState           // cors.go; nil until Register
	idSigner   IDTokenSigner        // Config.IDSigner (oidc.go)
	keys       verify.KeySource     // Config.Keys
	approvals  *throttle.Limiter    // the signed-in users' approvals (approvals.go)
	clientKeys *clientKeyCache      // private_key_jwt clients' keys (clientassert.go)
	meta       *metaDocs            // client ID metadata documents (clientmeta.go)
	defaultAud audience             // {Config.Audience}: aud of a token without resources
	device     *throttle.Limiter    // device-code requests per address and client (device.go)
}

// New checks cfg, fills in defaults and returns a Server.
func New(cfg Config) (*Server, error) {
	cfg, err := withDefaults(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, store: cfg.Store, log: cfg.Logger, now: cfg.Now,
		refreshKey: cfg.RefreshTokenKey, tagger: data.NewRefreshTagger(cfg.RefreshTokenKey), grace: cfg.RefreshReuseGrace}
	s.idSigner, s.keys = cfg.IDSigner, cfg.Keys
	s.defaultAud = audience{cfg.Audience}
	s.meta = newMetaDocs(cfg)
	s.par = newPARState(cfg)
	s.device = newDeviceLimiter(cfg)
	s.clientKeys = &clientKeyCache{fetch: cfg.Fetcher, m: map[string]*clientKeys{}}
	s.dpop = verify.NewDPoP(verify.DPoPConfig{Window: cfg.DPoPWindow, Nonces: cfg.Store, Now: cfg.Now})
	s.jtis = verify.NewMemoryNoncesFilter(localJTIs, cfg.Now)
	s.metrics = newMetrics(cfg.Registerer)
	s.tok = newTokenState(cfg)
	s.approvals = newApprovalLimiter(cfg)
	return s, nil
}

// withDefaults checks cfg and returns it with every default filled in:
// the Config a Server keeps and builds its parts from.
func withDefaults(cfg Config) (Config, error) {
	if cfg.Store == nil || cfg.Signer == nil || cfg.Verifier == nil || cfg.MeAuth == nil {
		return cfg, errors.New("issuer: Config needs Store, Signer, Verifier and MeAuth")
	}
	cfg, err := withAddresses(cfg)
	if err != nil {
		return cfg, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Fetcher == nil {
		cfg.Fetcher = netsafe.New(netsafe.Options{})
	}
	if cfg.UserinfoAuth == nil {
		cfg.UserinfoAuth = cfg.MeAuth
	}
	if cfg.IDSigner == nil {
		cfg.IDSigner, _ = cfg.Signer.(IDTokenSigner)
	}
	if cfg.Keys == nil {
		cfg.Keys, _ = cfg.Signer.(verify.KeySource)
	}
	return withTokenRules(cfg)
}

// withAddresses checks the issuer URL and the resources of cfg and fills
// in AppURL and Audience.
func withAddresses(cfg Config) (Config, error) {
	u, err := url.Parse(cfg.Issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return cfg, errors.New("issuer: Config.Issuer must be an http(s) URL without query or fragment")
	}
	cfg.Issuer = strings.TrimSuffix(cfg.Issuer, "/")
	if cfg.AppURL == "" {
		cfg.AppURL = cfg.Issuer
	}
	cfg.AppURL = strings.TrimSuffix(cfg.AppURL, "/")
	if cfg.Audience == "" {
		cfg.Audience = cfg.Issuer
	}
	if err := CheckResources(cfg.Resources); err != nil {
		return cfg, fmt.Errorf("issuer: Config.Resources: %w", err)
	}
	cfg.Resources = slices.Clone(cfg.Resources)
	return cfg, nil
}

// withTokenRules checks and fills in the lifetimes and limits of what the
// server issues and caches: tokens, codes, the refresh-token key and
// grace, device codes, metadata documents.
func withTokenRules(cfg Config) (Config, error) {
	if cfg.AccessTTL <= 0 {
		cfg.AccessTTL = 30 * time.Minute
	}
	if cfg.IDTokenTTL <= 0 {
		cfg.IDTokenTTL = cfg.AccessTTL
	}
	if cfg.DeviceCodeMax <= 0 {
		cfg.DeviceCodeMax = DefaultDeviceCodeMax
	}
	if cfg.CodeTTL <= 0 {
		cfg.CodeTTL = DefaultCodeTTL
	}
	if cfg.CodeTTL > MaxCodeTTL {
		return cfg, errors.New("issuer: Config.CodeTTL must be at most 10 minutes (RFC 6749 §4.1.2)")
	}
	if cfg.RefreshIdle <= 0 {
		cfg.RefreshIdle = DefaultRefreshIdle
	}
	if cfg.RefreshMax <= 0 {
		cfg.RefreshMax = DefaultRefreshMax
	}
	switch len(cfg.RefreshTokenKey) {
	case 0:
		cfg.RefreshTokenKey = make([]byte, data.RefreshKeySize)
		rand.Read(cfg.RefreshTokenKey)
	case data.RefreshKeySize:
	default:
		return cfg, fmt.Errorf("issuer: Config.RefreshTokenKey must be %d bytes", data.RefreshKeySize)
	}
	if cfg.RefreshReuseGrace < 0 || cfg.RefreshReuseGrace > MaxRefreshReuseGrace {
		return cfg, errors.New("issuer: Config.RefreshReuseGrace must be between 0 (no grace) and MaxRefreshReuseGrace (5 minutes)")
	}
	if cfg.MetadataMinTTL <= 0 {
		cfg.MetadataMinTTL = DefaultMetadataMinTTL
	}
	if cfg.MetadataMaxTTL <= 0 {
		cfg.MetadataMaxTTL = DefaultMetadataMaxTTL
	}
	if cfg.MetadataMaxTTL < cfg.MetadataMinTTL {
		return cfg, errors.New("issuer: Config.MetadataMaxTTL must not be below MetadataMinTTL")
	}
	return cfg, nil
}

// Register mounts the issuer's endpoints on e: the token, revocation and
// introspection endpoints, the RFC 8414 metadata and /v2/me. The consent
// pages (package consent) mount the authorization endpoint.
func (s *Server) Register(e *echo.Echo) {
	e.POST("/v2/auth/oauth2/token", s.handleToken)
	e.POST(parPath, s.handlePAR)
	e.POST(devicePath, s.handleDeviceAuthorization)
	e.POST("/v2/auth/oauth2/revoke", s.handleRevoke)
	e.POST("/v2/auth/oauth2/introspect", s.handleIntrospect)
	e.GET("/.well-known/oauth-authorization-server", s.handleMetadata)
	e.GET("/.well-known/openid-configuration", s.handleMetadata)
	e.GET("/v2/me", s.handleMe, s.cfg.MeAuth)
	e.GET(userinfoPath, s.handleUserinfo, s.cfg.UserinfoAuth)
	e.POST(userinfoPath, s.handleUserinfo, s.cfg.UserinfoAuth)
	s.registerCORS(e)
}
