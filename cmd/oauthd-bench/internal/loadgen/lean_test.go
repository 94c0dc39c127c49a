package loadgen

import (
	"bufio"
	"context"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRefreshServerCloses: the server closes the connection without an
// answer (before rotating) on the chain's 1st request (a fresh
// connection) and its 3rd, 6th, … (kept-alive ones). Each is a transport
// error ("net"), as it was with net/http's client, after which the chain
// pauses, reconnects and sends the same token again: it stays alive, and
// its newest token is the server's current one (any other token would
// have been refused and ended the chain).
func TestRefreshServerCloses(t *testing.T) {
	for _, netHTTP := range []bool{false, true} {
		t.Run(clientName(netHTTP), func(t *testing.T) {
			f, srv := newFakeAS(t, "a")
			f.drop = func(_ string, n int) bool { return n == 1 || n%3 == 0 }
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			f.onOK = func(_ string, n int) {
				if n == 6 {
					cancel()
				}
			}
			e := f.endpoint(srv)
			e.netHTTP = netHTTP
			rep, live, _ := e.Refresh(ctx, []string{"a.0"}, 1, time.Hour, Progress{})
			if rep.ChainsAlive != 1 || !slices.Equal(live, []string{"a.6"}) || f.token("a") != "a.6" {
				t.Fatalf("report %+v, live %q; want the chain alive at a.6", rep, live)
			}
			f.mu.Lock()
			dropped := int64(f.dropped)
			conns := len(f.remotes)
			f.mu.Unlock()
			if want := map[string]int64{"200": 6, "net": dropped}; dropped < 3 || !maps.Equal(rep.ByStatus, want) || rep.Errors != dropped {
				t.Errorf("by status %v, errors %d, %d dropped; want %v", rep.ByStatus, rep.Errors, dropped, want)
			}
			if conns != int(dropped)+1 {
				t.Errorf("%d connections; want one more than the drops (%d)", conns, dropped+1)
			}
		})
	}
}

// TestRefreshConnectionClose: a server that answers "Connection: close"
// gets a new connection for every request, and the chain goes on.
func TestRefreshConnectionClose(t *testing.T) {
	f, srv := newFakeAS(t, "a")
	f.closeAfter = map[string]bool{"a": true}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f.onOK = func(_ string, n int) {
		if n == 5 {
			cancel()
		}
	}
	rep, live, _ := f.endpoint(srv).Refresh(ctx, []string{"a.0"}, 1, time.Hour, Progress{})
	if rep.OK != 5 || rep.Errors != 0 || !slices.Equal(live, []string{"a.5"}) {
		t.Errorf("report %+v, live %q; want 5 rotations, no error", rep, live)
	}
	f.mu.Lock()
	n := len(f.remotes)
	f.mu.Unlock()
	if n != 5 {
		t.Errorf("%d connections; want one per request (5)", n)
	}
}

// TestLeanRead: the responses a token endpoint may send, and what the
// lean client makes of them.
func TestLeanRead(t *testing.T) {
	for _, tc := range []struct {
		name, raw    string
		status       int
		body         string
		keep, failed bool
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ncontent-length: 7\r\n\r\n{\"a\":1}", 200, `{"a":1}`, true, false},
		{"close", "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", 400, "{}", false, false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n", 200, `{"a":1}`, true, false},
		{"until EOF", "HTTP/1.0 503 Service Unavailable\r\n\r\nbusy", 503, "busy", false, false},
		{"no CR", "HTTP/1.1 204 No Content\n\n", 204, "", true, false},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}", 0, "", false, true},
		{"bad status", "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n", 0, "", false, true},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", 0, "", false, true},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, "", false, true},
		{"too long", "HTTP/1.1 200 OK\r\nContent-Length: 70000\r\n\r\n", 0, "", false, true},
		{"gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 0, "", false, true},
		{"header without colon", "HTTP/1.1 200 OK\r\nbroken\r\n\r\n", 0, "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &leanClient{br: bufio.NewReaderSize(strings.NewReader(tc.raw), 4<<10)}
			status, body, keep, err := c.read()
			if tc.failed {
				if err == nil {
					t.Errorf("read = %d %q, no error; want an error", status, body)
				}
				return
			}
			if err != nil || status != tc.status || string(body) != tc.body || keep != tc.keep {
				t.Errorf("read = %d %q keep %v, %v; want %d %q keep %v", status, body, keep, err, tc.status, tc.body, tc.keep)
			}
		})
	}
	// Nothing at all: the connection was closed before a response.
	c := &leanClient{br: bufio.NewReader(strings.NewReader(""))}
	if status, _, _, err := c.read(); status != 0 || err == nil {
		t.Errorf("empty read = %d, %v; want 0 and an error", status, err)
	}
}

// TestLeanClientURL: only plain http:// URLs get the lean client (https
// stays with net/http), and the request it writes is a keep-alive form
// POST to the URL's path and query.
func TestLeanClientURL(t *testing.T) {
	if _, err := newLeanClient("https://127.0.0.1/token"); err == nil {
		t.Error("https URL: no error; want the lean client refused")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer conn.Close()
		req, err := http.ReadRequest(bufio.NewReader(conn))
		if err != nil {
			got <- err.Error()
			return
		}
		req.ParseForm()
		got <- req.Method + " " + req.URL.RequestURI() + " " + req.Host + " " + req.Header.Get("Content-Type") + " " + req.PostForm.Get("x")
		conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	}()
	c, err := newLeanClient("http://" + ln.Addr().String() + "/v2/token?q=1")
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	status, body, err := c.post([]byte("x=y%26z"))
	if err != nil || status != 200 || string(body) != "ok" {
		t.Errorf("post = %d %q, %v; want 200 ok", status, body, err)
	}
	if want := "POST /v2/token?q=1 " + ln.Addr().String() + " application/x-www-form-urlencoded y&z"; <-got != want {
		t.Errorf("server saw a different request; want %q", want)
	}
}

// BenchmarkRefreshClient compares the two clients of a refresh chain
// against a server that answers every request with the same token
// response (about the size of oauthd's: a 500-byte access token). Client
// and server share the process, so ns/op and allocs/op are both sides';
// the server side is the same for both clients.
func BenchmarkRefreshClient(b *testing.B) {
	reply := []byte(`{"access_token":"` + strings.Repeat("a", 500) + `","token_type":"Bearer","expires_in":900,"refresh_token":"` + strings.Repeat("r", 43) + `","scope":"profile:read"}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		w.Write(reply)
	}))
	defer srv.Close()
	for _, netHTTP := range []bool{false, true} {
		b.Run(clientName(netHTTP), func(b *testing.B) {
			e := Endpoint{HTTP: NewHTTPClient(1), TokenURL: srv.URL, ClientID: "client", ClientSecret: strings.Repeat("s", 43), netHTTP: netHTTP}
			p := e.poster(b.Context(), e.clientPrefix("refresh_token")+"&refresh_token=")
			defer p.close()
			b.ReportAllocs()
			for b.Loop() {
				if status, _, err := p.post(strings.Repeat("r", 43)); status != 200 || err != nil {
					b.Fatal(status, err)
				}
			}
		})
	}
}

// TestRefreshTokenOf: the refresh token is read without decoding the body
// only where that is certain; otherwise the body is decoded as JSON.
func TestRefreshTokenOf(t *testing.T) {
	for _, tc := range []struct {
		body, want string
		ok         bool
	}{
		{`{"access_token":"a.b.c","token_type":"Bearer","refresh_token":"r-1_x","expires_in":900}`, "r-1_x", true},
		{`{"refresh_token":"r2"}`, "r2", true},
		{`{"access_token":"a"}`, "", false},
		{`{"refresh_token" : "r3"}`, "", false},
		{`{"refresh_token":"r\u002d4"}`, "", false},
		{`{"refresh_token":""}`, "", false},
		{`{"refresh_token":"r5","refresh_token":"r6"}`, "", false},
		{`{"error_description":"\"refresh_token\":\"x\"","refresh_token":"r7"}`, "r7", true},
	} {
		got, ok := refreshTokenOf([]byte(tc.body))
		if got != tc.want || ok != tc.ok {
			t.Errorf("refreshTokenOf(%s) = %q, %v; want %q, %v", tc.body, got, ok, tc.want, tc.ok)
		}
	}
}
