package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestGatewayHonoursLogFlags: the gateway logs with the global
// --log-format and --log-level, as every other command does: JSON records
// with --log-format json, and no info record at --log-level warn.
func TestGatewayHonoursLogFlags(t *testing.T) {
	up := httptest.NewServer(http.NotFoundHandler())
	defer up.Close()
	tests := []struct {
		name  string
		level string
		wait  string // a message the run logs
		want  bool   // "gateway listening" (info) is logged
	}{
		{"json at info", "info", "gateway listening", true},
		{"json at warn", "warn", "jwks not fetched yet", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr lockedBuffer
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, []string{"--log-format", "json", "--log-level", tc.level, "gateway", "--listen", "127.0.0.1:0",
					"--upstream", up.URL, "--issuer", "http://127.0.0.1:1", "--dpop-trust-host"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
			}()
			deadline := time.Now().Add(15 * time.Second)
			for !strings.Contains(stderr.String(), tc.wait) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("gateway: %v\n%s", err, stderr.String())
			}
			out := stderr.String()
			if !strings.Contains(out, tc.wait) {
				t.Fatalf("no %q record:\n%s", tc.wait, out)
			}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["level"] == nil || rec["msg"] == nil {
					t.Errorf("log line %q is not a JSON record (%v)", line, err)
				}
			}
			if got := strings.Contains(out, `"msg":"gateway listening"`); got != tc.want {
				t.Errorf("info record logged = %v at --log-level %s; want %v\n%s", got, tc.level, tc.want, out)
			}
		})
	}
}
