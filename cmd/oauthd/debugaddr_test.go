package main

import (
	"context"
	"io"
	"math"
	"net/http"
	"oauthd/data/password"
	"oauthd/issuer"
	"runtime/debug"
	"strings"
	"testing"
)

func TestDebugAddrOnlyOnLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:6060", "example.com:6060", "nonsense"} {
		if srv, _, err := listenDebug(addr); err == nil {
			srv.Close()
			t.Errorf("listenDebug(%q) = nil error; want a refusal (profiles must not be public)", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0", "localhost:0"} {
		srv, url, err := listenDebug(addr)
		if err != nil {
			if strings.Contains(addr, "::1") && strings.Contains(err.Error(), "listen") {
				continue // no IPv6 loopback on this machine
			}
			t.Fatalf("listenDebug(%q): %v", addr, err)
		}
		resp, err := http.Get(url + "cmdline")
		if err != nil {
			t.Fatalf("GET %scmdline: %v", url, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) == 0 {
			t.Fatalf("GET %scmdline: %d %q; want 200 with the command line", url, resp.StatusCode, body)
		}
		srv.Shutdown(context.Background())
	}
}

func TestLimitMemoryLeavesTheOperatorsChoice(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOMEMLIMIT", "")
	limitMemory(3)
	if got, want := debug.SetMemoryLimit(-1), password.MemoryLimit(issuer.MemoryBase, 3); got != want {
		t.Fatalf("memory limit for 3 slots = %d; want %d", got, want)
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(math.MaxInt64)
	limitMemory(3)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("memory limit with GOMEMLIMIT set = %d; want it left alone", got)
	}
}
