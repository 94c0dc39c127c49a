package netsafe

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false, "169.254.169.254": false,
		"100.64.0.1": false, "0.0.0.0": false, "::1": false, "fd00::1": false, "fe80::1": false,
		"::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false, "64:ff9b::a00:1": false, "224.0.0.1": false, "255.255.255.255": false,
	} {
		if got := Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v; want %v", addr, got, want)
		}
	}
}

func TestFetch(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Write([]byte(`{"keys":[]}`))
		case "/big":
			w.Write([]byte(strings.Repeat("x", 2000)))
		case "/redirect":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/slow":
			time.Sleep(2 * time.Second)
		}
	}))
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	ctx := context.Background()

	// The default: a loopback address is refused at the connection.
	if _, err := New(Config{RootCAs: pool}).Get(ctx, srv.URL+"/ok", ""); !errors.Is(err, ErrRefused) {
		t.Errorf("loopback by default: %v; want ErrRefused", err)
	}
	f := New(Config{RootCAs: pool, AllowPrivate: true, MaxBody: 1000, Timeout: 500 * time.Millisecond})
	if b, err := f.Get(ctx, srv.URL+"/ok", ""); err != nil || string(b) != `{"keys":[]}` {
		t.Errorf("ok = %q, %v", b, err)
	}
	for path, want := range map[string]error{"/big": ErrRefused, "/redirect": ErrRefused} {
		if _, err := f.Get(ctx, srv.URL+path, ""); !errors.Is(err, want) {
			t.Errorf("%s: %v; want %v", path, err, want)
		}
	}
	if _, err := f.Get(ctx, srv.URL+"/slow", ""); err == nil {
		t.Errorf("slow: no error; want a timeout")
	}
	if _, err := f.Get(ctx, strings.Replace(srv.URL, "https", "http", 1)+"/ok", ""); !errors.Is(err, ErrRefused) {
		t.Errorf("http: %v; want ErrRefused", err)
	}
}
