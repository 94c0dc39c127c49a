package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/bbolt"
)

// TestCLINeverInventsDatabase: every command but serve, on a missing, empty
// or never set-up database, fails with a sentence that names the path and
// --db / OAUTHD_DB, and leaves no file behind.
func TestCLINeverInventsDatabase(t *testing.T) {
	t.Setenv("OAUTHD_MASTER_KEY", "")
	t.Setenv("OAUTHD_DB", "")
	dir := t.TempDir()
	legacy := filepath.Join(dir, "legacy.json")
	if err := os.WriteFile(legacy, []byte(`[{"client_id":"a","name":"A","owner":"o@example.com","redirect_uris":["https://a.example/cb"],"client_secret":"s"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	commands := [][]string{
		{"users", "list"}, {"users", "add", "--email", "a@example.com", "--username", "a", "--name", "A", "--password-stdin"},
		{"clients", "list"}, {"clients", "show", "abc"}, {"clients", "approve", "abc"}, {"clients", "reject", "abc", "--reason", "x"},
		{"clients", "create", "--owner", "a@example.com", "--name", "A", "--redirect-uri", "https://a.example/cb", "--scope", "PROFILE_READ"},
		{"clients", "import", legacy}, {"clients", "scopes", "set", "abc", "PROFILE_READ"}, {"clients", "redirect-uris", "set", "abc", "https://a.example/cb"},
		{"clients", "secrets", "list", "abc"}, {"clients", "secrets", "generate", "abc"}, {"clients", "secrets", "revoke", "abc", "cs_x"},
		{"keys", "list"}, {"keys", "rotate"}, {"keys", "revoke", "kid"},
	}
	neverSetUp := filepath.Join(dir, "bare.db") // a bbolt file without oauthd's schema
	db, err := bbolt.Open(neverSetUp, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, db, why string }{
		{"missing", filepath.Join(dir, "missing.db"), "the file does not exist"},
		{"missing directory", filepath.Join(dir, "nope", "o.db"), "the file does not exist"},
		{"empty file", empty, "the file is empty"},
		{"never set up", neverSetUp, "never set up by `oauthd serve`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := files(t, dir)
			for _, args := range commands {
				c := &cli{t: t, db: tc.db}
				out, errOut, err := c.run("a long password\n", args...)
				if err == nil {
					t.Errorf("oauthd %s succeeded on %s (stdout %q)", strings.Join(args, " "), tc.name, out)
					continue
				}
				for _, want := range []string{"there is no oauthd database at " + tc.db, tc.why, "--db PATH", "OAUTHD_DB"} {
					if !strings.Contains(errOut, want) {
						t.Errorf("oauthd %s: stderr %q; want it to contain %q", strings.Join(args, " "), errOut, want)
					}
				}
			}
			if after := files(t, dir); after != before {
				t.Errorf("files before: %s\nafter: %s", before, after)
			}
		})
	}

	// The real binary with the default ./oauthd.db, in an empty directory.
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

// files lists the files under dir with their sizes.
func files(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if fi, err := d.Info(); err == nil && !d.IsDir() {
			b.WriteString(p + ":" + string(rune('0'+min(fi.Size(), 9))) + " ")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
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
