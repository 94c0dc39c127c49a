package wiring

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"oauthd/keys/guard"
	"oauthd/keys/verify"
)

// GatewayConfig is the gateway's settings, checked (`oauthd gateway`'s
// flags make it).
type GatewayConfig struct {
	Upstream *url.URL
	Issuer   string
	JWKSURL  string
	Audience []string
	Table    *guard.Table
	Cache    int // verify.Config.CacheEntries
	// PublicURL and DPoPWindow: what DPoP proofs are checked against
	// (guard.Config.PublicURL, verify.DPoPConfig.Window).
	PublicURL  string
	DPoPWindow time.Duration
}

// Gateway is the gateway's handler and the parts a caller may need.
type Gateway struct {
	Handler http.Handler
	Proxy   *guard.Proxy
	Keys    *verify.RemoteKeySet
	Verify  *verify.Verifier
}

// Build wires the gateway as `oauthd gateway` runs it (`oauthd-bench
// --mode gateway` measures the same wiring). revoked, when not nil, makes
// the revoked-grants source from the key set.
func (cfg *GatewayConfig) Build(logger *slog.Logger, revoked func(verify.KeySource) (verify.RevokedGrants, error)) (*Gateway, error) {
	keySet := verify.NewRemoteKeySet(verify.RemoteConfig{URL: cfg.JWKSURL, Logger: logger})
	vcfg := verify.Config{Issuer: cfg.Issuer, Audiences: cfg.Audience, Keys: keySet, CacheEntries: cfg.Cache}
	if revoked != nil {
		r, err := revoked(keySet)
		if err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
		vcfg.Revoked = r
	}
	v, err := verify.New(vcfg)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	dp := verify.NewDPoP(verify.DPoPConfig{Window: cfg.DPoPWindow})
	meta := cfg.resourceMetadata()
	gcfg := guard.Config{Verifier: v, Table: cfg.Table, Logger: logger, DPoP: dp, PublicURL: cfg.PublicURL}
	if meta != nil {
		gcfg.MetadataURL = meta.metadataURL
	}
	g := guard.New(gcfg)
	proxy := guard.NewProxy(cfg.Upstream, g, logger)
	return &Gateway{Handler: gatewayHandler(proxy, meta), Proxy: proxy, Keys: keySet, Verify: v}, nil
}
