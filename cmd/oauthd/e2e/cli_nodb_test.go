package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIDefaultDatabaseMissing: the real binary, with no --db, in an
// empty directory, fails with exit code 1 and a sentence that names
// ./oauthd.db and its full path, and leaves no file behind.
func TestCLIDefaultDatabaseMissing(t *testing.T) {
	wd := t.TempDir()
	cmd := exec.Command(oauthdBin, "users", "list")
	cmd.Dir, cmd.Env = wd, cleanEnv()
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 ||
		!strings.Contains(string(out), "there is no oauthd database at ./oauthd.db ("+filepath.Join(wd, "oauthd.db")+")") {
		t.Errorf("oauthd users list in an empty directory: %v\n%s", err, out)
	}
	if ents, _ := os.ReadDir(wd); len(ents) != 0 {
		t.Errorf("oauthd users list left %v behind", ents)
	}
}

// TestCLIUnknownSubcommandExits: the real binary exits non-zero on an
// unknown subcommand, with the sentence TestCLIUnknownSubcommand checks
// in-process.
func TestCLIUnknownSubcommandExits(t *testing.T) {
	cmd := exec.Command(oauthdBin, "--db", filepath.Join(t.TempDir(), "o.db"), "clients", "lst")
	cmd.Env = cleanEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Error("oauthd clients lst exited 0")
	}
	if want := `unknown command "lst" for "oauthd clients"`; !strings.Contains(stderr.String(), want) {
		t.Errorf("oauthd clients lst: stderr %q; want it to contain %q", stderr.String(), want)
	}
}
