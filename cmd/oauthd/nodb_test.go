package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIUnknownSubcommand: an unknown subcommand, at any level, exits
// non-zero with a did-you-mean.
func TestCLIUnknownSubcommand(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"clinets"}, "clients"},
		{[]string{"clients", "lst"}, `unknown command "lst" for "oauthd clients" (did you mean list or set?)`},
		{[]string{"clients", "secrets", "genrate", "x"}, `(did you mean generate?)`},
		{[]string{"keys", "rotat"}, `(did you mean rotate?)`},
		{[]string{"clients", "xyzzy"}, `unknown command "xyzzy" for "oauthd clients"; see ` + "`oauthd clients --help`"},
	} {
		c.fails(tc.want, "", tc.args...)
	}
	// A group without a subcommand prints its help and succeeds.
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
		`the 30 scopes are in the README's scope table (README.md, "Scopes")`, "",
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
