package admin_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"oauthd/issuer/admin"
)

func TestListen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.sock")
	ln, err := admin.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket %v, %v; want a socket of mode 0600", fi.Mode(), err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()

	// A server answers there: refused, and its socket is left alone.
	if _, err := admin.Listen(path); err == nil || !strings.Contains(err.Error(), "another process answers") {
		t.Errorf("Listen on a live socket = %v; want refused", err)
	}
	if _, err := net.Dial("unix", path); err != nil {
		t.Errorf("the live socket was disturbed: %v", err)
	}

	// The server dies without removing its socket: the stale file is
	// replaced.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the stale socket file should still be there: %v", err)
	}
	ln2, err := admin.Listen(path)
	if err != nil {
		t.Fatalf("Listen over a stale socket = %v; want it replaced", err)
	}
	defer ln2.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("new socket %v, %v; want mode 0600", fi.Mode(), err)
	}
}
