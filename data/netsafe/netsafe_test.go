package netsafe

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestPublic(t *testing.T) {
	for _, s := range []string{"127.0.0.1", "127.8.9.10", "169.254.169.254", "10.1.2.3", "172.16.0.1", "192.168.1.1",
		"100.64.0.1", "0.0.0.0", "0.1.2.3", "255.255.255.255", "224.0.0.1", "::1", "::", "fe80::1", "fd00::1",
		"fd00:ec2::254", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "2001:db8::1", "198.18.0.1"} {
		if Public(netip.MustParseAddr(s)) {
			t.Errorf("Public(%s) = true", s)
		}
	}
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"} {
		if !Public(netip.MustParseAddr(s)) {
			t.Errorf("Public(%s) = false", s)
		}
	}
}

// TestClientRefuses is the attacker's list: a URL on loopback (by address
// and by name), the metadata service, a private range, plain http, a
// redirect, a 10 MB body (with and without Content-Length), a slow server.
// The forbidden addresses are refused in the dialer's Control function,
// before any packet is sent.
func TestClientRefuses(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"ok":true}`)) })
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "10485760")
		w.Write(make([]byte, 10<<20))
	})
	mux.HandleFunc("/big-chunked", func(w http.ResponseWriter, r *http.Request) {
		for range 10 << 10 {
			if _, err := w.Write(make([]byte, 1024)); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/slow-body", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		for range 50 {
			w.Write([]byte(" "))
			w.(http.Flusher).Flush()
			select {
			case <-time.After(100 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	})
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	tlsCfg := srv.Client().Transport.(*http.Transport).TLSClientConfig
	ctx := context.Background()

	strict := New(Options{TLS: tlsCfg, Timeout: time.Second})
	localhost := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	for _, u := range []string{srv.URL + "/ok", localhost + "/ok", "https://169.254.169.254/latest/meta-data/", "https://10.0.0.1/doc.json",
		"https://192.168.0.1/doc.json", "https://[::1]/doc.json", "https://[::ffff:127.0.0.1]:1/x"} {
		if _, err := strict.Get(ctx, u, "", 0); !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("Get(%s) = %v; want ErrForbiddenAddress", u, err)
		}
	}

	open := New(Options{TLS: tlsCfg, AllowPrivate: true, Timeout: time.Second})
	if r, err := open.Get(ctx, srv.URL+"/ok", "application/json", 0); err != nil || string(r.Body) != `{"ok":true}` {
		t.Fatalf("Get /ok with private networks allowed: %v", err)
	}
	for path, want := range map[string]error{"/redirect": ErrRedirect, "/big": ErrTooLarge, "/big-chunked": ErrTooLarge, "/nope": ErrStatus} {
		if _, err := open.Get(ctx, srv.URL+path, "", 0); !errors.Is(err, want) {
			t.Errorf("Get(%s) = %v; want %v", path, err, want)
		}
	}
	for _, u := range []string{strings.Replace(srv.URL, "https:", "http:", 1) + "/ok", "ftp://x/", "https://user@" + strings.TrimPrefix(srv.URL, "https://") + "/ok"} {
		if _, err := open.Get(ctx, u, "", 0); !errors.Is(err, ErrNotHTTPS) {
			t.Errorf("Get(%s) = %v; want ErrNotHTTPS", u, err)
		}
	}
	for _, path := range []string{"/slow", "/slow-body"} {
		start := time.Now()
		if _, err := open.Get(ctx, srv.URL+path, "", 0); err == nil {
			t.Errorf("Get(%s) succeeded", path)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("Get(%s) took %s; want the 1 s timeout", path, d)
		}
	}
}
