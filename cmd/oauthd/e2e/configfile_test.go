package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestConfigFileReachesServe: the settings of a file reach the running
// server, and --config names the file as OAUTHD_CONFIG does.
func TestConfigFileReachesServe(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "from-file.db")
	file := writeConfig(t, "db: "+db+"\nserve:\n  addr: 127.0.0.1:0\n  base-url: https://auth.example.test\n  code-ttl: 2m\n")
	cmd := exec.Command(oauthdBin, "serve", "--config", file)
	base, _ := startProcess(t, cmd, "serve", listenRE, nil)
	waitReady(t, base)
	var meta struct {
		Issuer string `json:"issuer"`
	}
	if resp := getJSON(t, base+"/.well-known/oauth-authorization-server", &meta); resp.StatusCode != http.StatusOK || meta.Issuer != "https://auth.example.test" {
		t.Errorf("metadata issuer %q (status %d); want the file's serve.base-url", meta.Issuer, resp.StatusCode)
	}
	if _, err := os.Stat(db); err != nil {
		t.Errorf("the file's db %s: %v", db, err)
	}
}
