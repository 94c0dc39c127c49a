package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"oauthd/cmd/internal/backend"
	"oauthd/cmd/internal/clitext"
	"oauthd/cmd/internal/wiring"
	"oauthd/cmd/oauthd-bench/internal/loadgen"
	"oauthd/keys"
	"oauthd/keys/guard"
)

// runGateway measures `oauthd gateway` against bare reverse proxies in
// front of the same upstream, all on loopback in this process (loadgen's
// Gateway): it wires an issuer's keys with their JWKS on loopback, mints
// the access tokens, and builds each target's proxy afresh.
func (o *benchOptions) runGateway(ctx context.Context, stdout, stderr io.Writer) error {
	km, issURL, stopIssuer, err := startIssuer(ctx)
	if err != nil {
		return err
	}
	defer stopIssuer()
	upURL, stopUpstream, err := loadgen.StartUpstream()
	if err != nil {
		return err
	}
	defer stopUpstream()
	one, many, err := mintAccessTokens(km, issURL, o.distinct)
	if err != nil {
		return err
	}
	gw := &wiring.GatewayConfig{Upstream: upURL, Issuer: issURL, JWKSURL: issURL + "/.well-known/jwks.json", Audience: []string{issURL},
		Table: guard.DefaultTable(), Cache: 0}
	var profile func(target string, rep int) (func(), error)
	if o.cpuProfile != "" {
		profile = func(target string, rep int) (func(), error) {
			return startCPUProfile(fmt.Sprintf("%s.%s.%d", o.cpuProfile, target, rep))
		}
	}
	rep, err := loadgen.Gateway(ctx, loadgen.GatewayConfig{Workers: o.concurrency, Duration: o.duration, Reps: o.reps,
		Targets: o.targets, One: one, Many: many, Start: gatewayTarget(upURL, gw), Profile: profile, Progress: clitext.Lines{W: stderr}})
	if err != nil {
		return err
	}
	return o.print(stdout, rep)
}

// startIssuer is the issuer's side: a key manager as serve has it (on a
// scratch store), its JWKS served on loopback at the returned URL until
// stop is called.
func startIssuer(ctx context.Context) (km *keys.Manager, url string, stop func(), err error) {
	km, err = keys.New(ctx, keys.Config{Store: backend.Scratch()})
	if err != nil {
		return nil, "", nil, fmt.Errorf("keys: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	srv := &http.Server{Handler: km, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return km, "http://" + ln.Addr().String(), func() { srv.Close() }, nil
}

// mintAccessTokens mints access tokens as the issuer at issURL mints them,
// signed by km's active key: one, and distinct others.
func mintAccessTokens(km *keys.Manager, issURL string, distinct int) (one string, many []string, err error) {
	now := time.Now()
	mint := func(i int) (string, error) {
		claims := jwt.MapClaims{
			"iss": issURL, "aud": issURL, "sub": strconv.Itoa(1 + i%1000), "client_id": "oauthd_bench_client_" + strconv.Itoa(i%100),
			"scope": "PROFILE_READ BOOKING_READ", "iat": now.Unix(), "exp": now.Add(keys.DefaultTokenTTL).Unix(),
			"jti": "bench-" + strconv.Itoa(i),
		}
		return km.Sign(claims)
	}
	if one, err = mint(distinct); err != nil {
		return "", nil, fmt.Errorf("sign: %w", err)
	}
	many = make([]string, distinct)
	for i := range many {
		if many[i], err = mint(i); err != nil {
			return "", nil, fmt.Errorf("sign: %w", err)
		}
	}
	return one, many, nil
}

// gatewayTarget starts a fresh proxy of a target in front of upURL: a bare
// reverse proxy, the same with the gateway's transport and buffer pool,
// or the gateway as gw wires it (without its token cache for
// loadgen.TargetUncached), its key set fetched.
func gatewayTarget(upURL *url.URL, gw *wiring.GatewayConfig) func(ctx context.Context, target string) (loadgen.Proxy, error) {
	logger := slog.New(slog.DiscardHandler)
	return func(ctx context.Context, target string) (loadgen.Proxy, error) {
		switch target {
		case loadgen.TargetBare:
			return loadgen.Proxy{Handler: httputil.NewSingleHostReverseProxy(upURL),
				CloseIdle: http.DefaultTransport.(*http.Transport).CloseIdleConnections}, nil
		case loadgen.TargetBareTuned:
			t := guard.NewTransport()
			return loadgen.Proxy{Handler: &httputil.ReverseProxy{
				Rewrite: func(pr *httputil.ProxyRequest) {
					pr.SetURL(upURL)
					pr.SetXForwarded()
				},
				Transport: t, BufferPool: guard.NewBufferPool(),
			}, CloseIdle: t.CloseIdleConnections}, nil
		}
		cfg := *gw
		if target == loadgen.TargetUncached {
			cfg.Cache = -1
		}
		g, err := cfg.Build(logger, nil)
		if err != nil {
			return loadgen.Proxy{}, err
		}
		if err := g.Keys.Refresh(ctx); err != nil {
			return loadgen.Proxy{}, fmt.Errorf("gateway: fetch the JWKS: %w", err)
		}
		return loadgen.Proxy{Handler: g.Handler, CloseIdle: g.Proxy.CloseIdleConnections, Cache: func() loadgen.CacheStats {
			st := g.Verify.CacheStats()
			return loadgen.CacheStats{Entries: st.Entries, Bytes: st.Bytes, MaxEntries: st.MaxEntries, Hits: st.Hits, Misses: st.Misses}
		}}, nil
	}
}
