package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"oauthd/data/bolt"
	"oauthd/data/postgres"
)

// TestVersionCommand: `oauthd version --json` says the Go version and,
// for each backend, the schema this build reads and the ones it upgrades;
// the text form and `--version` say the same; neither needs a database or
// reads the settings.
func TestVersionCommand(t *testing.T) {
	c := newCLI(t)
	var v versionInfo
	if err := json.Unmarshal([]byte(c.ok("", "version", "--json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.Go != runtime.Version() || v.Release == "" {
		t.Errorf("version --json = %+v; want go %s and a release", v, runtime.Version())
	}
	want := map[string]string{"bbolt": bolt.SchemaVersion, "postgres": strconv.Itoa(postgres.SchemaVersion())}
	for _, s := range v.Schemas {
		if s.Reads != want[s.Backend] {
			t.Errorf("schema of %s = %q; want %q", s.Backend, s.Reads, want[s.Backend])
		}
		delete(want, s.Backend)
	}
	if len(want) > 0 {
		t.Errorf("version --json lacks the schemas of %v", want)
	}
	if !slices.Equal(v.Schemas[0].Upgrades, []string{"1"}) {
		t.Errorf("bbolt upgrades %v; want [1]", v.Schemas[0].Upgrades)
	}
	text := c.ok("", "version")
	for _, w := range []string{"oauthd " + v.Release, "go:      " + v.Go, "schema:  bbolt " + bolt.SchemaVersion + " (upgrades 1)",
		"schema:  postgres " + strconv.Itoa(postgres.SchemaVersion())} {
		if !strings.Contains(text, w) {
			t.Errorf("version = %q; want it to contain %q", text, w)
		}
	}
	if got := c.ok("", "--version"); got != text {
		t.Errorf("--version = %q; want what version prints, %q", got, text)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("no-such-setting: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := c.ok("", "--db", filepath.Join(t.TempDir(), "none.db"), "--config", bad, "version"); got != text {
		t.Errorf("version with a bad config and no database = %q; want %q", got, text)
	}
}

// TestSchemaErrorsSayWhatToDo: a file of another schema than this build's
// is refused by every command but serve, unchanged, with both versions and
// what to do: a newer release's (run it, or restore the backup) and an
// older one's (start serve once, which upgrades it).
func TestSchemaErrorsSayWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		schema string
		args   []string
		want   []string
	}{
		{"3", []string{"users", "list"}, []string{`"3"`, `this oauthd reads "2"`, "run that release", "oauthd version", "restore the backup"}},
		{"3", []string{"clients", "create", "--owner", "a@example.com", "--name", "x", "--redirect-uri", "https://x.example/cb", "--scope", "PROFILE_READ"},
			[]string{`"3"`, `this oauthd reads "2"`, "run that release", "restore the backup"}},
		{"1", []string{"users", "list"}, []string{`"1"`, `this oauthd reads "2" and upgrades "1"`, "start `oauthd serve` on it once"}},
		// A command that writes does not upgrade the file either: only
		// serve does, once it has checked everything.
		{"1", []string{"clients", "create", "--owner", "a@example.com", "--name", "x", "--redirect-uri", "https://x.example/cb", "--scope", "PROFILE_READ"},
			[]string{`"1"`, `this oauthd reads "2" and upgrades "1"`, "start `oauthd serve` on it once"}},
	} {
		c := newCLI(t)
		setSchema(t, c.db, tc.schema)
		before := dirSums(t, filepath.Dir(c.db))
		_, stderr, err := c.run("", tc.args...)
		if err == nil {
			t.Fatalf("%s on schema %s succeeded", tc.args[:2], tc.schema)
		}
		if !sameSums(before, dirSums(t, filepath.Dir(c.db))) {
			t.Errorf("%s on schema %s changed the file", tc.args[:2], tc.schema)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s on schema %s: %q; want it to say %q", tc.args[:2], tc.schema, stderr, w)
			}
		}
	}
	// A bucket of a newer release.
	c := newCLI(t)
	db, err := bbolt.Open(c.db, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("from_the_future")); return err }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	c.fails(`which this one, reading schema "2", does not know); run that oauthd (`+"`oauthd version`", "", "clients", "create", "--owner", "a@example.com",
		"--name", "x", "--redirect-uri", "https://x.example/cb", "--scope", "PROFILE_READ")
}

// setSchema writes schema as the bbolt file's schema version.
func setSchema(t *testing.T, path, schema string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema_version"), []byte(schema))
	}); err != nil {
		t.Fatal(err)
	}
}
