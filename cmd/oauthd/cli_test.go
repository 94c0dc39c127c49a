package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"oauthd/data/bolt"
)

// cli runs the oauthd command line in-process (through NewRootCommand) on
// the database db.
type cli struct {
	t  *testing.T
	db string
}

func newCLI(t *testing.T) *cli {
	t.Setenv("OAUTHD_MASTER_KEY", "")
	t.Setenv("OAUTHD_DB", "")
	c := &cli{t: t, db: filepath.Join(t.TempDir(), "o.db")}
	setUpDB(t, c.db)
	return c
}

// setUpDB creates an empty oauthd database at path, as serve does on its
// first start (the other commands never create one).
func setUpDB(t *testing.T, path string) {
	t.Helper()
	s, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// run returns stdout, stderr and the error.
func (c *cli) run(stdin string, args ...string) (string, string, error) {
	c.t.Helper()
	var out, errb bytes.Buffer
	err := run(c.t.Context(), append([]string{"--db", c.db}, args...), strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), err
}

// ok runs a command that must succeed and returns its stdout.
func (c *cli) ok(stdin string, args ...string) string {
	c.t.Helper()
	out, errOut, err := c.run(stdin, args...)
	if err != nil {
		c.t.Fatalf("oauthd %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// fails runs a command that must fail with stderr containing want.
func (c *cli) fails(want string, stdin string, args ...string) {
	c.t.Helper()
	out, errOut, err := c.run(stdin, args...)
	if err == nil {
		c.t.Fatalf("oauthd %s succeeded (stdout %q); want an error", strings.Join(args, " "), out)
	}
	if !strings.Contains(errOut, want) {
		c.t.Errorf("oauthd %s: stderr %q; want it to contain %q", strings.Join(args, " "), errOut, want)
	}
}

// oneJSON decodes out, which must hold exactly one JSON value, into v.
func oneJSON(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout %q is not JSON: %v", out, err)
	}
	if err := dec.Decode(new(json.RawMessage)); !errors.Is(err, io.EOF) {
		t.Fatalf("stdout %q holds more than one JSON value", out)
	}
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestCLIUsers(t *testing.T) {
	c := newCLI(t)
	var u map[string]any
	oneJSON(t, c.ok("correct horse battery\n", "users", "add", "--email", "dev@example.com", "--username", "dev", "--name", "Dev Eloper", "--password-stdin", "--json"), &u)
	if u["id"] != 1.0 || u["email"] != "dev@example.com" || u["username"] != "dev" || u["name"] != "Dev Eloper" {
		t.Errorf("users add --json = %v", u)
	}
	tests := []struct {
		name, stdin, want string
		args              []string
	}{
		{"no --password-stdin", "x", "pass --password-stdin", []string{"--email", "a@example.com", "--username", "a", "--name", "A"}},
		{"empty password", "\n", "stdin held no password", []string{"--email", "a@example.com", "--username", "a", "--name", "A", "--password-stdin"}},
		{"short password", "short\n", "at least 8 characters", []string{"--email", "a@example.com", "--username", "a", "--name", "A", "--password-stdin"}},
		{"duplicate", "long enough pw", "already exists", []string{"--email", "DEV@example.com", "--username", "x", "--name", "A", "--password-stdin"}},
		{"bad time zone", "long enough pw", "IANA time zone", []string{"--email", "b@example.com", "--username", "b", "--name", "B", "--time-zone", "Nowhere/City", "--password-stdin"}},
		{"missing flag", "long enough pw", `required flag(s) "email"`, []string{"--username", "b", "--name", "B", "--password-stdin"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.fails(tc.want, tc.stdin, append([]string{"users", "add"}, tc.args...)...)
		})
	}
	var list []map[string]any
	oneJSON(t, c.ok("", "users", "list", "--json"), &list)
	if len(list) != 1 {
		t.Errorf("users list --json = %v; want 1 user", list)
	}
	if out := c.ok("", "users", "list"); !strings.Contains(out, "EMAIL") || !strings.Contains(out, "dev@example.com") {
		t.Errorf("users list = %q; want a table", out)
	}
}

func addUser(c *cli) {
	c.ok("correct horse battery", "users", "add", "--email", "dev@example.com", "--username", "dev", "--name", "Dev", "--password-stdin")
}

func TestCLIClients(t *testing.T) {
	c := newCLI(t)
	addUser(c)
	c.fails(`no user "ghost@example.com" (--owner takes a user's ID, email or username); add one with `+"`oauthd users add`", "",
		"clients", "create", "--owner", "ghost@example.com", "--name", "A", "--redirect-uri", "https://a.example/cb", "--scope", "PROFILE_READ")
	c.fails("unknown scope NOPE", "",
		"clients", "create", "--owner", "dev@example.com", "--name", "A", "--redirect-uri", "https://a.example/cb", "--scope", "PROFILE_READ,NOPE")
	c.fails("use https", "",
		"clients", "create", "--owner", "dev@example.com", "--name", "A", "--redirect-uri", "http://a.example/cb", "--scope", "PROFILE_READ")

	var created map[string]any
	oneJSON(t, c.ok("", "clients", "create", "--owner", "dev@example.com", "--name", "Cal Sync", "--redirect-uri", "https://a.example/cb",
		"--redirect-uri", "http://127.0.0.1:8000/cb", "--scope", "PROFILE_READ BOOKING_READ", "--scope", "SCHEDULE_READ", "--json"), &created)
	want := []string{"client_id", "client_secret", "client_type", "grant_types", "name", "redirect_uris", "scopes", "secret_id", "status", "token_endpoint_auth_method"}
	if got := keysOf(created); !slices.Equal(got, want) {
		t.Errorf("clients create --json keys = %v; want %v", got, want)
	}
	if created["status"] != "pending" || created["client_type"] != "confidential" || len(created["scopes"].([]any)) != 3 {
		t.Errorf("clients create --json = %v", created)
	}
	id := created["client_id"].(string)

	var pub map[string]any
	oneJSON(t, c.ok("", "clients", "create", "--owner", "dev@example.com", "--name", "SPA", "--redirect-uri", "https://spa.example/cb", "--scope", "PROFILE_READ", "--public", "--json"), &pub)
	if _, has := pub["client_secret"]; has || pub["client_type"] != "public" {
		t.Errorf("public clients create --json = %v; want no client_secret", pub)
	}
	if out := c.ok("", "clients", "create", "--owner", "dev@example.com", "--name", "Human", "--redirect-uri", "https://h.example/cb", "--scope", "PROFILE_READ"); !strings.Contains(out, "client_secret:") || !strings.Contains(out, "shown only once") {
		t.Errorf("clients create (human) = %q", out)
	}

	var shown map[string]any
	oneJSON(t, c.ok("", "clients", "show", id, "--json"), &shown)
	if shown["legacy"] != false || len(shown["secrets"].([]any)) != 1 || shown["secrets"].([]any)[0].(map[string]any)["secret_id"] != created["secret_id"] {
		t.Errorf("clients show --json = %v", shown)
	}
	if strings.Contains(c.ok("", "clients", "show", id, "--json"), "hash") {
		t.Error("clients show leaks a hash")
	}
	c.fails("no client with ID \"nope\"; list them with `oauthd clients list`", "", "clients", "show", "nope")
	c.fails("takes CLIENT_ID", "", "clients", "show")

	c.fails(`required flag(s) "reason"`, "", "clients", "reject", id)
	oneJSON(t, c.ok("", "clients", "reject", id, "--reason", "spam", "--json"), &shown)
	if shown["status"] != "rejected" || shown["reject_reason"] != "spam" {
		t.Errorf("clients reject = %v", shown)
	}
	oneJSON(t, c.ok("", "clients", "approve", id, "--json"), &shown)
	if shown["status"] != "approved" {
		t.Errorf("clients approve = %v", shown)
	}
	var list []map[string]any
	oneJSON(t, c.ok("", "clients", "list", "--status", "approved", "--json"), &list)
	if len(list) != 1 || list[0]["client_id"] != id {
		t.Errorf("clients list --status approved = %v", list)
	}
	oneJSON(t, c.ok("", "clients", "list", "--json"), &list)
	if len(list) != 3 {
		t.Errorf("clients list = %d clients; want 3", len(list))
	}
	c.fails("use pending, approved or rejected", "", "clients", "list", "--status", "bogus")
	if out := c.ok("", "clients", "list"); !strings.Contains(out, "CLIENT ID") || !strings.Contains(out, "Cal Sync") {
		t.Errorf("clients list = %q", out)
	}

	// Secrets.
	var sec map[string]any
	oneJSON(t, c.ok("", "clients", "secrets", "generate", id, "--json"), &sec)
	if got := keysOf(sec); !slices.Equal(got, []string{"client_secret", "secret_id"}) || !strings.HasPrefix(sec["client_secret"].(string), "oauthd_cs_") {
		t.Errorf("secrets generate --json = %v", sec)
	}
	c.fails("already has 2 active secrets; revoke one first", "", "clients", "secrets", "generate", id)
	var secrets []map[string]any
	oneJSON(t, c.ok("", "clients", "secrets", "list", id, "--json"), &secrets)
	if len(secrets) != 2 || !slices.Equal(keysOf(secrets[0]), []string{"created_at", "last_used_at", "secret_id"}) {
		t.Errorf("secrets list --json = %v", secrets)
	}
	c.ok("", "clients", "secrets", "revoke", id, created["secret_id"].(string))
	c.fails("is the last secret", "", "clients", "secrets", "revoke", id, sec["secret_id"].(string))
	c.fails("has no active secret", "", "clients", "secrets", "revoke", id, "cs_nope")

	// Scopes and redirect URIs.
	oneJSON(t, c.ok("", "clients", "scopes", "set", id, "PROFILE_READ", "ORG_BOOKING_READ", "--json"), &shown)
	if s := shown["scopes"].([]any); len(s) != 2 || s[1] != "ORG_BOOKING_READ" {
		t.Errorf("scopes set = %v", shown)
	}
	c.fails("unknown scope FOO", "", "clients", "scopes", "set", id, "FOO")
	oneJSON(t, c.ok("", "clients", "redirect-uris", "set", id, "https://b.example/cb", "--json"), &shown)
	if u := shown["redirect_uris"].([]any); len(u) != 1 || u[0] != "https://b.example/cb" {
		t.Errorf("redirect-uris set = %v", shown)
	}
	c.fails("fragment", "", "clients", "redirect-uris", "set", id, "https://b.example/cb#x")
}

func TestCLIImportAndMigrate(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "legacy.json")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`[{"client_id":"old-1","name":"Old","owner":"old@example.com","redirect_uris":["https://old.example/cb"],"client_secret":"legacy-secret"},
	        {"client_id":"old-2","name":"Bad","owner":"old@example.com","redirect_uris":["https://old.example/cb"]}]`)
	c.fails("client 2 (\"old-2\"): a confidential client needs its client_secret", "", "clients", "import", file)
	var list []map[string]any
	oneJSON(t, c.ok("", "clients", "list", "--json"), &list)
	if len(list) != 0 {
		t.Fatalf("a failed import stored %d clients; want none", len(list))
	}
	write(`not json`)
	c.fails("is not a JSON array", "", "clients", "import", file)
	write(`[{"client_id":"old-1","name":"Old","owner":"old@example.com","redirect_uris":["https://old.example/cb"],"client_secret":"legacy-secret"},
	        {"client_id":"old-2","name":"Old SPA","owner":"old@example.com","redirect_uris":["http://localhost:3000/cb"],"client_type":"public"}]`)
	var ids []string
	oneJSON(t, c.ok("", "clients", "import", file, "--json"), &ids)
	if !slices.Equal(ids, []string{"old-1", "old-2"}) {
		t.Errorf("clients import = %v", ids)
	}
	c.fails("already exists", "", "clients", "import", file)

	var shown map[string]any
	oneJSON(t, c.ok("", "clients", "show", "old-1", "--json"), &shown)
	ar, _ := shown["authorization_requests"].(map[string]any)
	if shown["legacy"] != true || shown["status"] != "approved" || ar == nil || ar["days"] != 30.0 || ar["without_scope"] != 0.0 || shown["migration_safe"] != true {
		t.Errorf("clients show (legacy) = %v", shown)
	}
	if out := c.ok("", "clients", "show", "old-1"); !strings.Contains(out, "legacy:") || !strings.Contains(out, "authorization_requests:") {
		t.Errorf("clients show (human) = %q", out)
	}
	oneJSON(t, c.ok("", "clients", "scopes", "set", "old-1", "PROFILE_READ,BOOKING_READ", "--json"), &shown)
	if shown["legacy"] != false || len(shown["scopes"].([]any)) != 2 {
		t.Errorf("migration = %v", shown)
	}
}

func TestCLIKeys(t *testing.T) {
	c := newCLI(t)
	var ks []map[string]any
	// Listing creates nothing: a database without keys says so.
	c.fails("no signing keys yet: start `oauthd serve` or `store copy` into it", "", "keys", "list", "--json")
	var rot map[string]any
	oneJSON(t, c.ok("", "keys", "rotate", "--alg", "EdDSA", "--json"), &rot) // makes active + next, then rotates
	oneJSON(t, c.ok("", "keys", "list", "--json"), &ks)
	for _, k := range ks {
		for _, f := range []string{"kid", "alg", "state", "created_at"} {
			if _, ok := k[f]; !ok {
				t.Errorf("key %v has no %q", k, f)
			}
		}
	}
	states := map[string]string{}
	for _, k := range ks {
		states[k["kid"].(string)] = k["state"].(string)
	}
	if len(ks) != 3 {
		t.Errorf("keys after rotate = %v; want next, active, retired", ks)
	}
	c.fails("not a supported algorithm", "", "keys", "rotate", "--alg", "HS256")
	var retired string
	for kid, st := range states {
		if st == "retired" {
			retired = kid
		}
	}
	if out := c.ok("", "keys", "revoke", "--", retired); !strings.Contains(out, retired) {
		t.Errorf("keys revoke = %q", out)
	}
	c.fails("no signing key with kid", "", "keys", "revoke", "--", retired)
	if out := c.ok("", "keys", "list"); !strings.Contains(out, "STATE") || strings.Contains(out, retired) {
		t.Errorf("keys list = %q", out)
	}
}

func TestCLIMasterKey(t *testing.T) {
	c := newCLI(t)
	t.Setenv("OAUTHD_MASTER_KEY", "not a key")
	c.fails("OAUTHD_MASTER_KEY is not usable", "", "keys", "rotate")
	t.Setenv("OAUTHD_MASTER_KEY", strings.Repeat("ab", 32))
	c.ok("", "keys", "rotate")
	t.Setenv("OAUTHD_MASTER_KEY", "")
	c.fails("encrypted", "", "keys", "rotate")
	c.ok("", "keys", "list") // listing reads public facts only: no master key needed
	// Commands that do not touch keys work without the master key.
	addUser(c)
}
