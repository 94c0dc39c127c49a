package guard

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"oauthd/data/oauth"
)

// The headers through which the proxy tells the upstream who is calling.
// The proxy first removes every incoming header whose name starts with
// "X-Oauthd-" (case-insensitive, and also when spelled with underscores),
// so a caller cannot forge them.
const (
	HeaderUserID       = "X-Oauthd-User-Id"      // the token's sub
	HeaderClientID     = "X-Oauthd-Client-Id"    // the token's client_id
	HeaderScopes       = "X-Oauthd-Scopes"       // granted scopes, space-separated
	HeaderUnrestricted = "X-Oauthd-Unrestricted" // "true" for an unrestricted legacy token; absent otherwise
	// HeaderSubjectType is "user" for a token issued for a user, "client"
	// for one a client got for itself (client_credentials): then
	// [HeaderUserID] is absent and [HeaderClientID] names the caller.
	HeaderSubjectType = "X-Oauthd-Subject-Type"
)

const headerPrefix = "x-oauthd-"

// NewProxy returns the handler behind `oauthd gateway`: g in front of a
// reverse proxy to upstream. A request the guard lets through is
// forwarded with its canonical path (see [CanonicalPath]) joined to
// upstream's path, the caller's X-Oauthd-* headers removed and the
// identity headers ([HeaderUserID], [HeaderClientID], [HeaderScopes],
// [HeaderUnrestricted]) set from the verified claims; on a public route
// without a valid token no identity header is set. The Authorization
// header is passed on. Bodies are streamed both ways: a response of
// unknown length (chunked, or server-sent events) is flushed to the caller
// as each piece arrives; one with a Content-Length goes through the
// server's write buffer, as httputil.ReverseProxy does by default (forcing
// a flush on every response cost a timer, a goroutine wake-up and often a
// second write per request). The upstream's responses, errors included,
// pass through unchanged; an unreachable upstream gives 502 with a JSON
// body.
func NewProxy(upstream *url.URL, g *Guard, logger *slog.Logger) *Proxy {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	transport := NewTransport()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.SetXForwarded()
			setIdentity(pr.Out.Header, pr.In.Context())
			// W3C traceparent of the gateway's span, when traces are on
			// (the global propagator is a no-op otherwise).
			otel.GetTextMapPropagator().Inject(pr.In.Context(), propagation.HeaderCarrier(pr.Out.Header))
		},
		Transport:  transport,
		BufferPool: bufferPool{},
		ErrorLog:   slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				// The caller went away; nobody reads this response.
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			logger.LogAttrs(r.Context(), slog.LevelError, "upstream unavailable",
				slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("err", err.Error()))
			h := w.Header()
			h.Set("Content-Type", "application/json")
			h.Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`{"error":"` + oauth.BadGateway + `","error_description":"the upstream server is unavailable"}` + "\n"))
		},
	}
	return &Proxy{handler: g.HTTP(rp), transport: transport}
}

// Proxy is the guarded reverse proxy [NewProxy] returns.
type Proxy struct {
	handler   http.Handler
	transport *http.Transport
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.handler.ServeHTTP(w, r) }

// CloseIdleConnections closes the proxy's idle connections to the
// upstream.
func (p *Proxy) CloseIdleConnections() { p.transport.CloseIdleConnections() }

// Sizes of the proxy's connection pool and copy buffers.
const (
	// MaxUpstreamIdleConns is how many idle keep-alive connections to the
	// upstream the proxy keeps. http.DefaultTransport keeps 2 per host: a
	// gateway with more concurrent requests than that would open (and
	// leave in TIME_WAIT) a new upstream connection for most requests.
	MaxUpstreamIdleConns = 1024
	copyBufferSize       = 32 << 10
)

// NewTransport returns the transport [NewProxy] reaches the upstream with:
// http.DefaultTransport's settings (proxy from the environment, dial and
// TLS timeouts, HTTP/2 when the upstream offers it over TLS), with up to
// [MaxUpstreamIdleConns] idle connections kept to the one upstream host,
// and no transparent gzip: the caller's Accept-Encoding is passed on as it
// came, and the upstream's encoding passed back untouched.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = MaxUpstreamIdleConns
	t.MaxIdleConnsPerHost = MaxUpstreamIdleConns
	t.DisableCompression = true
	return t
}

// bufferPool reuses the 32 KiB buffers the proxy copies bodies through,
// instead of allocating one per request (httputil.ReverseProxy's default).
type bufferPool struct{}

var copyBuffers = sync.Pool{New: func() any { return new([copyBufferSize]byte) }}

func (bufferPool) Get() []byte { return copyBuffers.Get().(*[copyBufferSize]byte)[:] }

func (bufferPool) Put(b []byte) {
	if len(b) == copyBufferSize {
		copyBuffers.Put((*[copyBufferSize]byte)(b))
	}
}

// NewBufferPool returns the buffer pool [NewProxy] uses (for a bare proxy
// to compare with, as `oauthd bench --mode gateway` does).
func NewBufferPool() httputil.BufferPool { return bufferPool{} }

// setIdentity removes forged identity headers from h and sets those of
// the claims in ctx.
func setIdentity(h http.Header, ctx context.Context) {
	for k := range h {
		if len(k) >= len(headerPrefix) &&
			strings.EqualFold(strings.ReplaceAll(k[:len(headerPrefix)], "_", "-"), headerPrefix) {
			delete(h, k)
		}
	}
	c, ok := ClaimsFrom(ctx)
	if !ok {
		return
	}
	// One backing array for the values (h.Set would allocate one per
	// header); the names are canonical already.
	vals := make([]string, 5)
	vals[0], vals[1], vals[2], vals[3], vals[4] = c.Subject, c.ClientID, strings.Join(c.Scopes, " "), "true", "user"
	if c.HasUser() {
		h[HeaderUserID] = vals[0:1:1]
	} else {
		vals[4] = "client"
	}
	h[HeaderSubjectType] = vals[4:5:5]
	h[HeaderClientID] = vals[1:2:2]
	h[HeaderScopes] = vals[2:3:3]
	if c.Unrestricted {
		h[HeaderUnrestricted] = vals[3:4:4]
	}
}
