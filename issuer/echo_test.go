package issuer_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"oauthd/issuer"
)

func TestTrustedProxies(t *testing.T) {
	tests := []struct {
		name    string
		cidrs   []string
		peer    string
		xff     string
		want    string
		wantErr string
	}{
		{"none: the peer, whatever the header says", nil, "203.0.113.9:1234", "198.51.100.7", "203.0.113.9", ""},
		{"trusted peer: the client it names", []string{"10.0.0.5/32"}, "10.0.0.5:1234", "198.51.100.7", "198.51.100.7", ""},
		{"trusted peer: a forged hop before the client is ignored", []string{"10.0.0.5/32"}, "10.0.0.5:1234", "6.6.6.6, 198.51.100.7", "198.51.100.7", ""},
		{"trusted peers in a chain", []string{"10.0.0.0/29"}, "10.0.0.5:1234", "198.51.100.7, 10.0.0.3", "198.51.100.7", ""},
		{"untrusted peer: its own address", []string{"10.0.0.5/32"}, "10.0.0.6:1234", "198.51.100.7", "10.0.0.6", ""},
		{"loopback is not trusted unless named", []string{"10.0.0.5/32"}, "127.0.0.1:1234", "198.51.100.7", "127.0.0.1", ""},
		{"ipv6 proxy", []string{"2001:db8::5/128"}, "[2001:db8::5]:1234", "198.51.100.7", "198.51.100.7", ""},
		{"not a CIDR", []string{"10.0.0.300/32"}, "", "", "", `"10.0.0.300/32": invalid CIDR address`},
		{"every IPv4 address", []string{"10.0.0.5/32", "0.0.0.0/0"}, "", "", "", `"0.0.0.0/0" trusts every address`},
		{"every IPv6 address", []string{"::/0"}, "", "", "", `"::/0" trusts every address`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ipx, err := issuer.TrustedProxies(tc.cidrs)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("TrustedProxies(%q) = %v; want an error starting %q", tc.cidrs, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.RemoteAddr = tc.peer
			req.Header.Set("X-Forwarded-For", tc.xff)
			req.Header.Set("X-Real-IP", "6.6.6.6")
			if got := ipx(req); got != tc.want {
				t.Errorf("source address = %q; want %q", got, tc.want)
			}
		})
	}
}

// TestNewEcho: one log line and one count per request (the route, not the
// path, as the label; the path, never the query, in the log), a panic is a
// 500, and a body over MaxBody is refused.
func TestNewEcho(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	reg := prometheus.NewRegistry()
	e := issuer.NewEcho(logger, reg, echo.ExtractIPDirect(), nil)
	e.GET("/things/:id", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	e.GET("/panic", func(echo.Context) error { panic("boom") })
	e.POST("/upload", func(c echo.Context) error {
		if _, err := c.FormParams(); err != nil {
			return err
		}
		return c.NoContent(http.StatusNoContent)
	})

	serve := func(method, target, body string) int {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec.Code
	}
	if got := serve(http.MethodGet, "/things/7?code=oauthd_ac_SECRET&state=s", ""); got != http.StatusOK {
		t.Errorf("GET /things/7 = %d; want 200", got)
	}
	serve(http.MethodGet, "/things/8", "")
	if got := serve(http.MethodGet, "/nowhere", ""); got != http.StatusNotFound {
		t.Errorf("GET /nowhere = %d; want 404", got)
	}
	if got := serve(http.MethodGet, "/panic", ""); got != http.StatusInternalServerError {
		t.Errorf("GET /panic = %d; want 500", got)
	}
	if got := serve(http.MethodPost, "/upload", "x="+strings.Repeat("a", 64<<10)); got != http.StatusRequestEntityTooLarge {
		t.Errorf("POST of 64 KiB + 2 bytes = %d; want 413", got)
	}
	if got := serve(http.MethodPost, "/upload", "x=small"); got != http.StatusNoContent {
		t.Errorf("POST of a small body = %d; want 204", got)
	}

	counts := []struct {
		method, route, status string
		want                  float64
	}{
		{"GET", "/things/:id", "200", 2},
		{"GET", "unmatched", "404", 1},
		{"GET", "/panic", "500", 1},
		{"POST", "/upload", "413", 1},
		{"POST", "/upload", "204", 1},
	}
	for _, c := range counts {
		if got := requestCount(t, reg, c.method, c.route, c.status); got != c.want {
			t.Errorf("oauthd_http_requests_total{%s %s %s} = %v; want %v", c.method, c.route, c.status, got, c.want)
		}
	}
	if n := strings.Count(logs.String(), `"msg":"request"`); n != 6 {
		t.Errorf("%d request log lines; want 6:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), `"path":"/things/7"`) || strings.Contains(logs.String(), "SECRET") || strings.Contains(logs.String(), "state=") {
		t.Errorf("the log lacks the path or has the query:\n%s", logs.String())
	}
}

// requestCount is the oauthd_http_requests_total of the labels.
func requestCount(t *testing.T, reg *prometheus.Registry, method, route, status string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "oauthd_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["method"] == method && labels["route"] == route && labels["status"] == status {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestMachineTrafficAtDebug: the routes machines poll (gateways' feed and
// JWKS, probes, scrapers) log their request line at debug, everything
// else at info; a machine route that fails with a 5xx at info.
func TestMachineTrafficAtDebug(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := issuer.NewEcho(logger, prometheus.NewRegistry(), echo.ExtractIPDirect(), nil)
	ok := func(c echo.Context) error { return c.String(http.StatusOK, "ok") }
	for _, p := range []string{"/healthz", "/metrics", "/.well-known/jwks.json", "/.well-known/revoked-grants", "/.well-known/oauth-authorization-server", "/v2/me"} {
		e.GET(p, ok)
	}
	e.GET("/readyz", func(c echo.Context) error { return c.String(http.StatusServiceUnavailable, "down") })
	for _, tc := range []struct{ path, level string }{
		{"/healthz", "DEBUG"}, {"/metrics", "DEBUG"}, {"/.well-known/jwks.json", "DEBUG"},
		{"/.well-known/revoked-grants", "DEBUG"}, {"/.well-known/oauth-authorization-server", "DEBUG"},
		{"/readyz", "INFO"}, {"/v2/me", "INFO"},
	} {
		logs.Reset()
		e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, tc.path, nil))
		if want := `"level":"` + tc.level + `","msg":"request"`; !strings.Contains(logs.String(), want) {
			t.Errorf("GET %s logged %s; want level %s", tc.path, logs.String(), tc.level)
		}
	}
}
