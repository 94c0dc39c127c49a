package guard

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// seen is what the stub upstream received.
type seen struct {
	path   string
	header http.Header
	body   string
}

func newProxyPair(t *testing.T, upstream http.HandlerFunc) (*httptest.Server, chan seen) {
	t.Helper()
	ch := make(chan seen, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case ch <- seen{path: r.URL.Path, header: r.Header.Clone(), body: string(b)}:
		default:
		}
		if upstream != nil {
			upstream(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL + "/api")
	gw := httptest.NewServer(NewProxy(u, newTestGuard(), slog.New(slog.DiscardHandler)))
	t.Cleanup(gw.Close)
	return gw, ch
}

func TestProxyIdentityHeaders(t *testing.T) {
	forged := map[string]string{
		"X-Oauthd-User-Id":      "1",
		"x-oauthd-client-id":    "admin",
		"X-OAUTHD-SCOPES":       "ORG_MEMBERSHIP_WRITE",
		"X-Oauthd-Unrestricted": "true",
		"X-Oauthd-Anything":     "x",
		"X_Oauthd_User_Id":      "1",
	}
	for _, tc := range []struct {
		name, target, token string
		want                map[string]string // identity headers the upstream must see; nil = none
		wantPath            string
	}{
		{"scoped", "/v2/me/", tokenFor("PROFILE_READ", "BOOKING_READ"),
			map[string]string{HeaderUserID: "7", HeaderSubjectType: "user", HeaderClientID: "app", HeaderScopes: "PROFILE_READ BOOKING_READ"}, "/api/v2/me"},
		{"client_credentials: no user", "/v2/me/", "machine.PROFILE_READ",
			map[string]string{HeaderSubjectType: "client", HeaderClientID: "sync-job", HeaderScopes: "PROFILE_READ"}, "/api/v2/me"},
		{"unrestricted", "/v2/not-in-table?x=1", "unrestricted",
			map[string]string{HeaderUserID: "7", HeaderSubjectType: "user", HeaderClientID: "legacy", HeaderScopes: "", HeaderUnrestricted: "true"}, "/api/v2/not-in-table"},
		{"public without token", "/v2/slots", "", nil, "/api/v2/slots"},
		{"public with invalid token", "/v2/slots", "forged", nil, "/api/v2/slots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw, ch := newProxyPair(t, nil)
			req, _ := http.NewRequest("GET", gw.URL+tc.target, nil)
			for k, v := range forged {
				req.Header[k] = []string{v} // as sent, not canonicalised
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d; want 200", resp.StatusCode)
			}
			got := <-ch
			if got.path != tc.wantPath {
				t.Errorf("upstream path %q; want %q", got.path, tc.wantPath)
			}
			for k, vs := range got.header {
				norm := strings.ToLower(strings.ReplaceAll(k, "_", "-"))
				if !strings.HasPrefix(norm, "x-oauthd-") {
					continue
				}
				want, ok := tc.want[http.CanonicalHeaderKey(k)]
				if !ok || len(vs) != 1 || vs[0] != want {
					t.Errorf("upstream saw %s: %q; want %q (set: %v)", k, vs, want, ok)
				}
			}
			for k, v := range tc.want {
				if g := got.header.Values(k); len(g) != 1 || g[0] != v {
					t.Errorf("upstream %s = %q; want [%q]", k, g, v)
				}
			}
			if tc.token != "" && got.header.Get("Authorization") != "Bearer "+tc.token {
				t.Errorf("upstream Authorization = %q; want it passed on", got.header.Get("Authorization"))
			}
		})
	}
}

func TestProxyRefusesBeforeUpstream(t *testing.T) {
	gw, ch := newProxyPair(t, nil)
	for _, tc := range []struct {
		target, token string
		status        int
	}{
		{"/v2/me", "", http.StatusUnauthorized},
		{"/v2/me", tokenFor("SCHEDULE_READ"), http.StatusForbidden},
		{"/v2/me/../teams", "unrestricted", http.StatusBadRequest},
		{"/v2/teams%2F1", "unrestricted", http.StatusBadRequest},
	} {
		req, _ := http.NewRequest("GET", gw.URL+tc.target, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("GET %s: status %d; want %d", tc.target, resp.StatusCode, tc.status)
		}
	}
	select {
	case s := <-ch:
		t.Errorf("upstream reached with %s", s.path)
	default:
	}
}

func TestProxyPassesUpstreamErrors(t *testing.T) {
	gw, _ := newProxyPair(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "boom from upstream")
	})
	req, _ := http.NewRequest("POST", gw.URL+"/v2/bookings", strings.NewReader(`{"start":"x"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusInternalServerError || string(b) != "boom from upstream" || resp.Header.Get("X-Upstream") != "yes" {
		t.Errorf("got %d %q %v; want the upstream's 500 unchanged", resp.StatusCode, b, resp.Header)
	}
}

func TestProxyRequestBody(t *testing.T) {
	gw, ch := newProxyPair(t, nil)
	body := strings.Repeat("x", 1<<20)
	req, _ := http.NewRequest("POST", gw.URL+"/v2/bookings", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := <-ch; got.body != body {
		t.Errorf("upstream got a body of %d bytes; want %d", len(got.body), len(body))
	}
}

func TestProxyStreamsResponse(t *testing.T) {
	release := make(chan struct{})
	gw, _ := newProxyPair(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		io.WriteString(w, "second\n")
	})
	defer close(release)
	resp, err := http.Get(gw.URL + "/v2/slots")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	// The first line arrives while the upstream is still blocked.
	if err != nil || line != "first\n" {
		t.Fatalf("first line %q, %v; want it before the upstream finishes", line, err)
	}
}

func TestProxyUpstreamDown(t *testing.T) {
	up := httptest.NewServer(http.NotFoundHandler())
	u, _ := url.Parse(up.URL)
	up.Close()
	gw := httptest.NewServer(NewProxy(u, newTestGuard(), slog.New(slog.DiscardHandler)))
	defer gw.Close()
	resp, err := http.Get(gw.URL + "/v2/slots")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadGateway || body["error"] != "bad_gateway" || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("got %d %v; want 502 bad_gateway JSON", resp.StatusCode, body)
	}
}
