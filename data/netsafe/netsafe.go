package netsafe

import (
	"context"
	"crypto/tls"
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

// Errors of a refused fetch; test them with errors.Is.
var (
	// ErrNotHTTPS: the URL is not an https URL with a host.
	ErrNotHTTPS = errors.New("only https URLs are fetched")
	// ErrForbiddenAddress: the host resolved to an address that is not
	// public (loopback, private, link-local, the metadata services, ...).
	ErrForbiddenAddress = errors.New("the address is not a public internet address")
	// ErrRedirect: the server answered a redirect, which is not followed.
	ErrRedirect = errors.New("redirects are not followed")
	// ErrTooLarge: the body is larger than the limit.
	ErrTooLarge = errors.New("the response is larger than allowed")
	// ErrStatus: the server answered another status than 200.
	ErrStatus = errors.New("the server did not answer 200")
)

// Defaults of [Options].
const (
	DefaultTimeout  = 5 * time.Second
	DefaultMaxBytes = 5 << 10
)

// Options configure a [Client].
type Options struct {
	// AllowPrivate lets fetches reach loopback, private and link-local
	// addresses too (the operator's choice, for tests and private
	// networks). Default false.
	AllowPrivate bool
	// Timeout bounds a whole fetch: connection, TLS, headers and body.
	// Default DefaultTimeout.
	Timeout time.Duration
	// TLS is the TLS configuration (tests give their own roots); default
	// the system roots (Go honours SSL_CERT_FILE and SSL_CERT_DIR).
	TLS *tls.Config
}

// Client fetches URLs under the rules of the package.
type Client struct {
	http    *http.Client
	timeout time.Duration
}

// New returns a Client for o.
func New(o Options) *Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	allow := o.AllowPrivate
	d := &net.Dialer{
		Timeout: o.Timeout,
		// Control runs on the address about to be connected to, after
		// name resolution: the check cannot be bypassed by a name that
		// resolves differently the second time.
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %q", ErrForbiddenAddress, address)
			}
			if !allow && !Public(ap.Addr()) {
				return fmt.Errorf("%w: %s", ErrForbiddenAddress, ap.Addr())
			}
			return nil
		},
	}
	tr := &http.Transport{
		Proxy:                  nil, // never through a proxy: the address checked is the one reached
		DialContext:            d.DialContext,
		TLSClientConfig:        o.TLS,
		TLSHandshakeTimeout:    o.Timeout,
		ResponseHeaderTimeout:  o.Timeout,
		MaxResponseHeaderBytes: 16 << 10,
		MaxIdleConns:           16,
		IdleConnTimeout:        30 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	return &Client{timeout: o.Timeout, http: &http.Client{
		Transport: tr,
		Timeout:   o.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

// Response is a fetched document.
type Response struct {
	Body   []byte
	Header http.Header
}

// Get fetches rawURL: https only, 200 only, at most maxBytes of body (0:
// DefaultMaxBytes), within the client's timeout. accept is the Accept
// header ("" for none).
func (c *Client) Get(ctx context.Context, rawURL, accept string, maxBytes int64) (*Response, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return nil, ErrNotHTTPS
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, ErrNotHTTPS
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	req.Header.Set("User-Agent", "oauthd")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return nil, fmt.Errorf("%w (status %d)", ErrRedirect, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%w: status %d", ErrStatus, resp.StatusCode)
	case resp.ContentLength > maxBytes:
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, resp.ContentLength, maxBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		// The time ran out as the body ended: cancelling the request can
		// end a slow server's body cleanly (its handler sees the closed
		// connection and returns), which must not pass for a whole one.
		return nil, fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	if int64(len(body)) > maxBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, maxBytes)
	}
	return &Response{Body: body, Header: resp.Header}, nil
}

// forbidden are the ranges that are not public internet addresses
// (IANA special-purpose registries) besides those netip reports itself
// (loopback, private, link-local, multicast, unspecified).
var forbidden = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (CGNAT)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use IPv4/IPv6 translation
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("fd00:ec2::254/128"),
}

// Public reports whether a is a public internet address: not loopback,
// private (RFC 1918, RFC 4193), link-local (169.254.0.0/16, the cloud
// metadata services' 169.254.169.254 among them; fe80::/10), multicast,
// unspecified or another special-purpose range. An IPv4-mapped IPv6
// address is judged as its IPv4 address, and the NAT64 prefix
// 64:ff9b::/96 as the IPv4 address it embeds.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if a.Is6() && netip.MustParsePrefix("64:ff9b::/96").Contains(a) {
		b := a.As16()
		return Public(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	}
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	if a.Zone() != "" {
		return false
	}
	for _, p := range forbidden {
		if p.Contains(a) {
			return false
		}
	}
	return true
}
