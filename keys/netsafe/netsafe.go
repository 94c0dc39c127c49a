package netsafe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// ErrRefused: the fetch was refused before or while connecting (not
// https, a private address, a redirect, a body too large).
var ErrRefused = errors.New("outbound fetch refused")

// Config configures a [Fetcher]. The zero value is the safe default.
type Config struct {
	// Timeout bounds a whole fetch (connect, TLS, headers, body).
	// Default 5 s.
	Timeout time.Duration
	// MaxBody bounds the body. Default 64 KiB.
	MaxBody int64
	// AllowPrivate allows loopback, private, link-local and other
	// non-public addresses (the operator's choice; tests).
	AllowPrivate bool
	// RootCAs replaces the system roots (tests).
	RootCAs *x509.CertPool
}

// Fetcher fetches documents safely; safe for concurrent use.
type Fetcher struct {
	cfg    Config
	client *http.Client
}

// New returns a Fetcher.
func New(cfg Config) *Fetcher {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 64 << 10
	}
	d := &net.Dialer{Timeout: cfg.Timeout, Control: func(network, address string, _ syscall.RawConn) error {
		return checkAddr(address, cfg.AllowPrivate)
	}}
	tr := &http.Transport{
		Proxy:                  nil, // never through a proxy: the address checked is the one connected
		DialContext:            d.DialContext,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: cfg.RootCAs},
		TLSHandshakeTimeout:    cfg.Timeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxResponseHeaderBytes: 16 << 10,
		MaxIdleConns:           16,
		IdleConnTimeout:        30 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	return &Fetcher{cfg: cfg, client: &http.Client{
		Transport: tr,
		Timeout:   cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return fmt.Errorf("%w: a redirect is not followed", ErrRefused)
		},
	}}
}

// checkAddr refuses a connection to a non-public address.
func checkAddr(address string, allowPrivate bool) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRefused, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %q is not an IP address", ErrRefused, host)
	}
	if !allowPrivate && !Public(ip) {
		return fmt.Errorf("%w: %s is not a public address", ErrRefused, ip)
	}
	return nil
}

// Public reports whether ip is a public unicast address: not loopback,
// private (RFC 1918, RFC 4193), link-local, multicast, unspecified,
// CGNAT (100.64/10), documentation, benchmarking, or an IPv4-mapped or
// NAT64 form of one.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() || !ip.IsGlobalUnicast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("2001::/32"),
}

// CheckURL checks that raw is an https URL with a host, without user
// info or fragment.
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "" || len(raw) > 2000 {
		return nil, fmt.Errorf("%w: %q must be an https URL with a host, no user info or fragment, at most 2000 bytes", ErrRefused, raw)
	}
	return u, nil
}

// Get fetches raw and returns the body of a 200 response of at most
// MaxBody bytes.
func (f *Fetcher) Get(ctx context.Context, raw string, accept string) ([]byte, error) {
	u, err := CheckURL(raw)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch %s: status %d", u.Redacted(), resp.StatusCode)
	}
	if resp.ContentLength > f.cfg.MaxBody {
		return nil, fmt.Errorf("%w: %s: body of %d bytes, more than %d", ErrRefused, u.Redacted(), resp.ContentLength, f.cfg.MaxBody)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, f.cfg.MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	if int64(len(b)) > f.cfg.MaxBody {
		return nil, fmt.Errorf("%w: %s: body larger than %d bytes", ErrRefused, u.Redacted(), f.cfg.MaxBody)
	}
	return b, nil
}
