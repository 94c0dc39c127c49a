package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
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

	// The real binary with the default ./oauthd.db: TestCLIDefaultDatabaseMissing.
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

// TestCLIUnknownSubcommand: an unknown subcommand, at any level, exits
// non-zero with a did-you-mean, worded the same at every level.
func TestCLIUnknownSubcommand(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"clinets"}, `unknown command "clinets" for "oauthd" (did you mean clients?); see ` + "`oauthd --help`"},
		{[]string{"srve", "--db", "x"}, `unknown command "srve" for "oauthd" (did you mean serve?)`},
		{[]string{"clients", "lst"}, `unknown command "lst" for "oauthd clients" (did you mean list or set?)`},
		{[]string{"clients", "secrets", "genrate", "x"}, `(did you mean generate?)`},
		{[]string{"keys", "rotat"}, `(did you mean rotate?)`},
		{[]string{"clients", "xyzzy"}, `unknown command "xyzzy" for "oauthd clients"; see ` + "`oauthd clients --help`"},
	} {
		c.fails(tc.want, "", tc.args...)
	}
	if _, errOut, _ := c.run("", "srve"); strings.Contains(errOut, "Did you mean this") {
		t.Errorf("oauthd srve: %q; want one did-you-mean style at every level", errOut)
	}
	// A group without a subcommand prints its help and succeeds.
	if out := c.ok(""); !strings.Contains(out, "Available Commands") {
		t.Errorf("oauthd = %q; want its help", out)
	}
	if out := c.ok("", "clients"); !strings.Contains(out, "Available Commands") {
		t.Errorf("oauthd clients = %q; want its help", out)
	}
	// The real binary's exit code: TestCLIUnknownSubcommandExits.
}

// TestCLIUnknownScope: the error lists the close matches and where the
// full list is.
func TestCLIUnknownScope(t *testing.T) {
	c := newCLI(t)
	addUser(c)
	c.fails(`unknown scope PROFILE_RAED (did you mean PROFILE_READ?), ORG_PROFILE (did you mean ORG_PROFILE_READ or ORG_PROFILE_WRITE?); `+
		`the scopes are in docs/SCOPES.md`, "",
		"clients", "create", "--owner", "dev@example.com", "--name", "A", "--redirect-uri", "https://a.example/cb", "--scope", "PROFILE_RAED,ORG_PROFILE")
}

// TestServeBadFlagsCreateNothing: serve checks its flags before it opens
// (and so creates) the database: a typo leaves nothing behind.
func TestServeBadFlagsCreateNothing(t *testing.T) {
	t.Setenv("OAUTHD_MASTER_KEY", "")
	t.Setenv("OAUTHD_DB", "")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"trusted proxy", []string{"--trusted-proxy", "10.0.0.300/32"}, "--trusted-proxy"},
		{"trusted proxy everyone", []string{"--trusted-proxy", "0.0.0.0/0"}, "trusts every address"},
		{"trusted proxy everyone v6", []string{"--trusted-proxy", "::/0"}, "trusts every address"},
		{"base url", []string{"--base-url", "ftp://x"}, "--base-url"},
		{"app url", []string{"--app-url", "https://x/?q=1"}, "--app-url"},
		{"debug addr", []string{"--debug-addr", "0.0.0.0:6060"}, "loopback"},
		{"addr", []string{"--addr", "127.0.0.1"}, "--addr"},
		{"refresh idle", []string{"--refresh-idle", "0"}, "--refresh-idle"},
		{"refresh max", []string{"--refresh-max", "-1h"}, "--refresh-max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "o.db")
			var out, errb bytes.Buffer
			args := append([]string{"--db", db, "serve", "--addr", "127.0.0.1:0"}, tc.args...)
			err := run(t.Context(), args, strings.NewReader(""), &out, &errb)
			if err == nil {
				t.Fatalf("serve %v succeeded; want an error", tc.args)
			}
			if !strings.Contains(errb.String(), tc.want) {
				t.Errorf("serve %v: stderr %q; want it to name %q", tc.args, errb.String(), tc.want)
			}
			if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("serve %v left %s behind (stat: %v); want no database", tc.args, db, err)
			}
		})
	}
}

// TestErrorsSayItOnce: an error's hint and the database's name appear
// once, though several layers know them (the master key's format and how
// to make one; the bbolt file that does not open).
func TestErrorsSayItOnce(t *testing.T) {
	c := newCLI(t)
	garbage := filepath.Join(t.TempDir(), "garbage.db")
	if err := os.WriteFile(garbage, []byte("not a bbolt file"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OAUTHD_MASTER_KEY", "too short")
	for _, tc := range []struct {
		args       []string
		once, want string
	}{
		{[]string{"keys", "rotate"}, "openssl rand", "the master key in OAUTHD_MASTER_KEY is not usable: a master key is 32 bytes"},
		{[]string{"--db", garbage, "users", "list"}, "open database", garbage},
	} {
		_, errOut, err := c.run("", tc.args...)
		if err == nil || strings.Count(errOut, tc.once) != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("oauthd %s: %v, stderr %q; want %q said once, and %q", strings.Join(tc.args, " "), err, errOut, tc.once, tc.want)
		}
	}
	// serve, with a usable master key (it reads the key before the database).
	t.Setenv("OAUTHD_MASTER_KEY", strings.Repeat("ab", 32))
	_, errOut, err := c.run("", "--db", garbage, "serve", "--addr", "127.0.0.1:0")
	if err == nil || strings.Count(errOut, "open database") != 1 {
		t.Errorf("serve on a file that is no database: %v, stderr %q; want \"open database\" once", err, errOut)
	}
}

// TestJSONRecordsNameEveryField: a --json record writes a field without a
// value as null instead of leaving it out, so that every record of a list
// has the same keys (users list: disabled_at, external_id; keys list:
// activated_at, retired_at; clients show: reject_reason, pending_change…).
func TestJSONRecordsNameEveryField(t *testing.T) {
	c := newCLI(t)
	c.ok("a long password\n", "users", "add", "--email", "ann@example.com", "--username", "ann", "--name", "Ann", "--password-stdin")
	c.ok("", "users", "disable", "ann")
	c.ok("a long password\n", "users", "add", "--email", "bob@example.com", "--username", "bob", "--name", "Bob", "--password-stdin")
	var created struct {
		ClientID string `json:"client_id"`
	}
	oneJSON(t, c.ok("", "clients", "create", "--owner", "bob@example.com", "--name", "App", "--redirect-uri", "https://app.example/cb", "--scope", "PROFILE_READ", "--json"), &created)
	c.ok("", "keys", "rotate")
	for _, tc := range []struct {
		args []string
		keys []string
	}{
		{[]string{"users", "list", "--json"}, []string{"disabled_at", "external_id", "time_zone", "state"}},
		{[]string{"keys", "list", "--json"}, []string{"activated_at", "retired_at"}},
		{[]string{"clients", "list", "--json"}, []string{"reject_reason", "pending_change", "rejected_change", "authorization_requests", "migration_safe"}},
		{[]string{"clients", "show", created.ClientID, "--json"}, []string{"reject_reason", "pending_change", "rejected_change", "authorization_requests", "migration_safe"}},
	} {
		var records []map[string]any
		out := c.ok("", tc.args...)
		if strings.HasPrefix(strings.TrimSpace(out), "{") {
			var one map[string]any
			oneJSON(t, out, &one)
			records = append(records, one)
		} else {
			oneJSON(t, out, &records)
		}
		nulls := 0
		for _, r := range records {
			for _, k := range tc.keys {
				v, ok := r[k]
				if !ok {
					t.Errorf("oauthd %s: a record without %q (want null when it has no value): %v", strings.Join(tc.args, " "), k, r)
				}
				if v == nil {
					nulls++
				}
			}
		}
		if nulls == 0 {
			t.Errorf("oauthd %s: no null among %v; want the fields without a value as null\n%s", strings.Join(tc.args, " "), tc.keys, out)
		}
	}
}
