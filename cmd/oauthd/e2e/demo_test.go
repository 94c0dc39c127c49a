package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// demoBannerOf runs `oauthd serve --demo args...` on a fresh database until
// it listens, stops it, and returns what it printed on stdout.
func demoBannerOf(t *testing.T, args ...string) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "o.db")
	cmd := exec.Command(oauthdBin, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--demo"}, args...)...)
	var out strings.Builder
	cmd.Stdout = &out
	_, done := startProcess(t, cmd, "serve", listenRE, &logSink{})
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-done; err != nil {
		t.Fatalf("serve --demo %v: %v", args, err)
	}
	return out.String()
}

// TestDemoBanner: the demo's instructions say how long the code lives (the
// one step a newcomer can be too slow for), and with the login handed over
// to a platform they send the user there instead of offering a password
// the built-in form, now off, would not take.
func TestDemoBanner(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	pemFile := filepath.Join(t.TempDir(), "platform.pub.pem")
	if err := os.WriteFile(pemFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		args          []string
		want, notWant []string
	}{
		{"default", nil,
			[]string{"log in as the demo user (demo@example.com, password demo-password-123)", "exchange it within 1 minute", "--code-ttl"},
			[]string{"handed over"}},
		{"code-ttl", []string{"--code-ttl", "5m"}, []string{"exchange it within 5 minutes"}, nil},
		{"handover", []string{"--login-url", "https://platform.example/login", "--login-issuer", "https://platform.example", "--login-jwks", pemFile},
			[]string{"sign in at the platform (https://platform.example/login", "handed over to the platform", "does not apply"},
			[]string{"password demo-password-123", "log in as the demo user"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := demoBannerOf(t, tc.args...)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the banner lacks %q:\n%s", w, out)
				}
			}
			for _, nw := range tc.notWant {
				if strings.Contains(out, nw) {
					t.Errorf("the banner says %q:\n%s", nw, out)
				}
			}
		})
	}
}
