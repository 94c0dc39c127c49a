package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// RequestTimeout bounds every request the generator sends.
const RequestTimeout = 10 * time.Second

// NewHTTPClient returns the client the token-endpoint drivers use: never
// through a proxy (loopback only), up to conns idle keep-alive
// connections, no compression, redirects not followed.
func NewHTTPClient(conns int) *http.Client {
	return &http.Client{
		Timeout: RequestTimeout,
		Transport: &http.Transport{
			Proxy:               nil, // loopback only, never through a proxy
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     30 * time.Second,
			DisableCompression:  true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Endpoint is a token endpoint and the confidential client that calls it
// (client_secret_post).
type Endpoint struct {
	HTTP         *http.Client
	TokenURL     string
	ClientID     string
	ClientSecret string

	// netHTTP makes refresh chains use HTTP (net/http's client) even for
	// an http:// URL, as they did before the lean client: for comparing
	// the two.
	netHTTP bool
}

// TokenReply is the part of a token response (RFC 6749 §5.1, §5.2) the
// generator reads.
type TokenReply struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	Error        string `json:"error"`
}

// Post posts the form body to the token endpoint and returns the status
// and the reply. Status 0 means a transport error (returned); a 200
// without a refresh token, or whose body does not parse, is returned
// with an error.
func (e Endpoint) Post(ctx context.Context, body string) (int, TokenReply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.TokenURL, strings.NewReader(body))
	if err != nil {
		return 0, TokenReply{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := e.HTTP.Do(req)
	if err != nil {
		return 0, TokenReply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return 0, TokenReply{}, err
	}
	tr, err := parseReply(resp.StatusCode, b)
	return resp.StatusCode, tr, err
}

// parseReply reads a token response's body: a 200 without a refresh
// token, or whose body does not parse, is an error.
func parseReply(status int, b []byte) (TokenReply, error) {
	var tr TokenReply
	if err := json.Unmarshal(b, &tr); err != nil && status == http.StatusOK {
		return tr, fmt.Errorf("token response: %w", err)
	}
	if status == http.StatusOK && tr.RefreshToken == "" {
		return tr, errors.New("token response without refresh_token")
	}
	return tr, nil
}

// clientPrefix is the start of every form e sends: the client's
// credentials (client_secret_post).
func (e Endpoint) clientPrefix(grantType string) string {
	return "grant_type=" + grantType + "&client_id=" + url.QueryEscape(e.ClientID) + "&client_secret=" + url.QueryEscape(e.ClientSecret)
}

// statusKey is how a response is counted by status: its code, or "net"
// for a transport error.
func statusKey(status int) string {
	if status == 0 {
		return "net"
	}
	return strconv.Itoa(status)
}

// CheckLoopback refuses a target URL that does not resolve to loopback
// addresses only (127.0.0.0/8 or ::1): the generator never loads another
// machine. The caller prefixes the error with where target came from.
func CheckLoopback(ctx context.Context, target string) error {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("give the token endpoint URL, e.g. http://127.0.0.1:8080/v2/auth/oauth2/token")
	}
	host := u.Hostname()
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			ips = append(ips, a.IP)
		}
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return errors.New("bench drives loopback servers only (127.0.0.0/8 or ::1)")
		}
	}
	if len(ips) == 0 {
		return errors.New("the host does not resolve")
	}
	return nil
}
