package guard

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
)

// BenchmarkProxy is one GET /v2/me over loopback through a proxy to a
// tiny upstream, client and both servers in this process: "bare" is an
// httputil.ReverseProxy with NewProxy's transport and buffer pool and
// nothing else, "gateway" is NewProxy with a real ES256 verifier and its
// token cache (one token, as one client sends it). The difference is
// what the guard, the cache and the identity headers cost per request.
func BenchmarkProxy(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"success","data":{"id":7}}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	v, mint := es256Issuer(b, 0)
	tok := mint("j1")
	bareT := NewTransport()
	bare := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(u); pr.SetXForwarded() },
		Transport: bareT, BufferPool: NewBufferPool(),
	}
	gw := NewProxy(u, New(Config{Verifier: v, Logger: slog.New(slog.DiscardHandler)}), slog.New(slog.DiscardHandler))
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"bare", bare}, {"gateway", gw}} {
		srv := httptest.NewServer(bc.h)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req, _ := http.NewRequest("GET", srv.URL+"/v2/me", nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				for pb.Next() {
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
		})
		client.CloseIdleConnections()
		srv.Close()
	}
	bareT.CloseIdleConnections()
	gw.CloseIdleConnections()
}
