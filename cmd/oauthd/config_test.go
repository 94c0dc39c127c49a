package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"oauthd/cmd/internal/wiring"
)

// clearConfigEnv unsets every variable a setting could read, for the
// test's duration.
func clearConfigEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "OAUTHD_") || strings.HasPrefix(name, "OTEL_") {
			t.Setenv(name, "")
		}
	}
}

// writeConfig writes a configuration file and returns its path.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "oauthd.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// configured parses args for the command name of a new command tree,
// configures it and returns its settings by key.
func configured(t *testing.T, name string, args ...string) (map[string]*setting, error) {
	t.Helper()
	c, _, err := NewRootCommand().Find([]string{name})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	sets, err := configure(c)
	m := map[string]*setting{}
	for _, s := range sets {
		m[s.key] = s
	}
	return m, err
}

// TestConfigPrecedence: a flag beats its variable, which beats the file,
// which beats the default, for a global, a serve and a gateway setting.
func TestConfigPrecedence(t *testing.T) {
	file := writeConfig(t, "db: file.db\nserve:\n  code-ttl: 2m\n  trusted-proxy: [10.0.0.0/8]\ngateway:\n  token-cache: 7\n")
	type layers struct{ flag, env, file bool }
	for _, tc := range []struct {
		name    string
		cmd     string
		key     string
		flag    string // the flag's argument
		env     string // the variable
		on      layers
		want    string
		wantSrc string
	}{
		{"global default", "serve", "db", "--db=flag.db", "OAUTHD_DB=env.db", layers{}, "./oauthd.db", fromDefault},
		{"global file", "serve", "db", "--db=flag.db", "OAUTHD_DB=env.db", layers{file: true}, "file.db", fromFile},
		{"global env over file", "serve", "db", "--db=flag.db", "OAUTHD_DB=env.db", layers{env: true, file: true}, "env.db", fromEnv},
		{"global flag over env", "serve", "db", "--db=flag.db", "OAUTHD_DB=env.db", layers{true, true, true}, "flag.db", fromFlag},
		{"serve default", "serve", "serve.code-ttl", "--code-ttl=3m", "OAUTHD_CODE_TTL=4m", layers{}, "1m0s", fromDefault},
		{"serve file", "serve", "serve.code-ttl", "--code-ttl=3m", "OAUTHD_CODE_TTL=4m", layers{file: true}, "2m0s", fromFile},
		{"serve env over file", "serve", "serve.code-ttl", "--code-ttl=3m", "OAUTHD_CODE_TTL=4m", layers{env: true, file: true}, "4m0s", fromEnv},
		{"serve flag over env", "serve", "serve.code-ttl", "--code-ttl=3m", "OAUTHD_CODE_TTL=4m", layers{true, true, true}, "3m0s", fromFlag},
		{"serve list file", "serve", "serve.trusted-proxy", "--trusted-proxy=10.1.0.0/16", "OAUTHD_TRUSTED_PROXIES=10.2.0.0/16, 10.3.0.0/16", layers{file: true}, "[10.0.0.0/8]", fromFile},
		{"serve list env", "serve", "serve.trusted-proxy", "--trusted-proxy=10.1.0.0/16", "OAUTHD_TRUSTED_PROXIES=10.2.0.0/16, 10.3.0.0/16", layers{env: true, file: true}, "[10.2.0.0/16,10.3.0.0/16]", fromEnv},
		{"serve list flag", "serve", "serve.trusted-proxy", "--trusted-proxy=10.1.0.0/16", "OAUTHD_TRUSTED_PROXIES=10.2.0.0/16", layers{true, true, true}, "[10.1.0.0/16]", fromFlag},
		{"gateway default", "gateway", "gateway.token-cache", "--token-cache=5", "OAUTHD_GATEWAY_TOKEN_CACHE=6", layers{}, "32768", fromDefault},
		{"gateway file", "gateway", "gateway.token-cache", "--token-cache=5", "OAUTHD_GATEWAY_TOKEN_CACHE=6", layers{file: true}, "7", fromFile},
		{"gateway env over file", "gateway", "gateway.token-cache", "--token-cache=5", "OAUTHD_GATEWAY_TOKEN_CACHE=6", layers{env: true, file: true}, "6", fromEnv},
		{"gateway flag over env", "gateway", "gateway.token-cache", "--token-cache=5", "OAUTHD_GATEWAY_TOKEN_CACHE=6", layers{true, true, true}, "5", fromFlag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearConfigEnv(t)
			var args []string
			if tc.on.flag {
				args = append(args, tc.flag)
			}
			if tc.on.env {
				name, val, _ := strings.Cut(tc.env, "=")
				t.Setenv(name, val)
			}
			if tc.on.file {
				t.Setenv(configEnv, file)
			}
			sets, err := configured(t, tc.cmd, args...)
			if err != nil {
				t.Fatal(err)
			}
			s := sets[tc.key]
			if s == nil {
				t.Fatalf("no setting %s", tc.key)
			}
			if got := s.flag.Value.String(); got != tc.want || s.source != tc.wantSrc {
				t.Errorf("%s = %s from %s; want %s from %s", tc.key, got, s.source, tc.want, tc.wantSrc)
			}
		})
	}
}

// TestConfigRefused: every unknown key, bad value or bad variable is
// refused at start with its path, before serve creates anything.
func TestConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string // the configuration file, if any
		env  string // NAME=value, if any
		want []string
	}{
		{"unknown global key", "adr: 127.0.0.1:1\n", "", []string{`adr: unknown key (did you mean "serve.addr"?)`}},
		{"unknown serve key", "serve:\n  code-tll: 1m\n", "", []string{`serve.code-tll: unknown key (did you mean "serve.code-ttl"?)`}},
		{"another command's key", "serve:\n  listen: 127.0.0.1:1\n", "", []string{`serve.listen: unknown key (did you mean "gateway.listen"?)`}},
		{"unknown section", "server:\n  addr: 127.0.0.1:1\n", "", []string{`server.addr: unknown key (did you mean "serve.addr"?)`}},
		{"far from any key", "colour: blue\n", "", []string{`colour: unknown key`}},
		{"bad duration", "serve:\n  code-ttl: 5x\n", "", []string{`serve.code-ttl: "5x" is not a duration`}},
		{"duration without unit", "serve:\n  refresh-idle: 30\n", "", []string{`serve.refresh-idle: "30" is not a duration`}},
		{"bad bool", "serve:\n  demo: maybe\n", "", []string{`serve.demo: "maybe" is not true or false`}},
		{"bad number in the other section", "gateway:\n  token-cache: lots\n", "", []string{`gateway.token-cache: "lots" is not a whole number`}},
		{"list for a value", "serve:\n  addr: [a, b]\n", "", []string{"serve.addr: want a string, not a list"}},
		{"mapping for a value", "serve:\n  code-ttl:\n    minutes: 1\n", "", []string{"serve.code-ttl.minutes: unknown key"}},
		{"no value", "serve:\n  addr:\n", "", []string{"serve.addr: has no value"}},
		{"section not a mapping", "serve: 5\n", "", []string{"serve: want a mapping"}},
		{"several at once", "adr: 1\nserve:\n  demo: maybe\n", "", []string{"adr: unknown key", "serve.demo:"}},
		{"yaml syntax", "serve:\n  addr: [\n", "", []string{"config file", "yaml"}},
		{"duplicate key", "serve:\n  addr: a:1\n  addr: b:2\n", "", []string{"config file", "already defined"}},
		{"range from the file", "serve:\n  code-ttl: 11m\n", "", []string{"--code-ttl 11m0s: use a duration between 1s and 10m0s"}},
		{"combination from the file", "serve:\n  login-url: https://app.example/login\n", "", []string{"needs all of --login-url, --login-issuer and --login-jwks"}},
		{"bad env duration", "", "OAUTHD_CODE_TTL=5x", []string{`OAUTHD_CODE_TTL: "5x" is not a duration`}},
		{"bad env grace", "", "OAUTHD_REFRESH_REUSE_GRACE=abc", []string{`OAUTHD_REFRESH_REUSE_GRACE: "abc" is not a duration`}},
		{"bad env number", "", "OAUTHD_PASSWORD_SLOTS=four", []string{`OAUTHD_PASSWORD_SLOTS: "four" is not a whole number`}},
		{"bad env bool", "", "OAUTHD_DEMO=yes please", []string{`OAUTHD_DEMO: "yes please" is not true or false`}},
		{"env out of range", "", "OAUTHD_REFRESH_REUSE_GRACE=6m", []string{"--refresh-reuse-grace 6m0s"}},
		{"bad env log level", "", "OAUTHD_LOG_LEVEL=loud", []string{`--log-level "loud"`}},
		{"session URL with a bbolt db", "", "OAUTHD_DB_SESSION_URL=postgres://u:secret@pg/oauthd", []string{"--db-session-url postgres://u:xxxxx@pg/oauthd", "both must be postgres:// URLs"}},
		{"missing file", "", "OAUTHD_CONFIG=/nonexistent/oauthd.yaml", []string{"config file /nonexistent/oauthd.yaml", "no such file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearConfigEnv(t)
			t.Setenv("OAUTHD_DB", filepath.Join(t.TempDir(), "new.db"))
			db, _ := wiring.EnvValue("OAUTHD_DB")
			if tc.file != "" {
				t.Setenv(configEnv, writeConfig(t, tc.file))
			}
			if tc.env != "" {
				name, val, _ := strings.Cut(tc.env, "=")
				t.Setenv(name, val)
			}
			var stderr bytes.Buffer
			err := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
			if err == nil {
				t.Fatal("serve started; want it refused")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q; want it to contain %q", err, w)
				}
			}
			if _, serr := os.Stat(db); serr == nil {
				t.Errorf("serve created %s before refusing its settings", db)
			}
		})
	}
}

// TestConfigFileReachesEveryCommand: the file's global keys reach the
// commands that have no section (the CLI finds the server's database).
func TestConfigFileReachesEveryCommand(t *testing.T) {
	clearConfigEnv(t)
	db := filepath.Join(t.TempDir(), "elsewhere.db")
	t.Setenv(configEnv, writeConfig(t, "db: "+db+"\nserve:\n  addr: 127.0.0.1:0\n"))
	err := run(context.Background(), []string{"users", "list"}, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "there is no oauthd database at "+db) {
		t.Errorf("users list: %v; want it to look for the file's db %s", err, db)
	}
	t.Setenv(configEnv, writeConfig(t, "serve:\n  adr: 127.0.0.1:0\n"))
	err = run(context.Background(), []string{"users", "list"}, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "serve.adr: unknown key") {
		t.Errorf("users list with a bad file: %v; want the file refused", err)
	}
}

// TestConfigEveryFlagSettable: every setting of every configurable
// command is accepted in the file, with its default as the value, and then
// comes from the file (a new flag is covered without a change here).
func TestConfigEveryFlagSettable(t *testing.T) {
	clearConfigEnv(t)
	known, _ := fileKeys()
	var b strings.Builder
	sections := map[string][]string{}
	for key, f := range known {
		v := f.DefValue
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			j, _ := json.Marshal(append([]string{}, sv.GetSlice()...))
			v = string(j)
		} else {
			j, _ := json.Marshal(v)
			v = string(j)
		}
		if section, name, ok := strings.Cut(key, "."); ok {
			sections[section] = append(sections[section], "  "+name+": "+v+"\n")
		} else {
			b.WriteString(key + ": " + v + "\n")
		}
	}
	for section, lines := range sections {
		b.WriteString(section + ":\n" + strings.Join(lines, ""))
	}
	t.Setenv(configEnv, writeConfig(t, b.String()))
	for _, name := range configuredCommands {
		sets, err := configured(t, name)
		if err != nil {
			t.Fatalf("%s: %v\nfile:\n%s", name, err, b.String())
		}
		for key, s := range sets {
			if s.source != fromFile || s.flag.Value.String() != s.flag.DefValue {
				t.Errorf("%s: %s = %q from %s; want its default %q from the file", name, key, s.flag.Value, s.source, s.flag.DefValue)
			}
		}
	}
}

// TestServePortTakenLeavesNoDatabase: serve binds its port before it
// creates the database, so a port in use leaves no file behind.
func TestServePortTakenLeavesNoDatabase(t *testing.T) {
	clearConfigEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	db := filepath.Join(dir, "fresh.db")
	var stderr bytes.Buffer
	err = run(context.Background(), []string{"serve", "--db", db, "--addr", ln.Addr().String()}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	if err == nil || !strings.Contains(err.Error(), "listen on "+ln.Addr().String()) || !strings.Contains(err.Error(), "pass another --addr") {
		t.Fatalf("serve on a taken port: %v; want the listen error and what to do", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("serve left %v behind; want nothing", entries)
	}
}

// TestGatewayConfigRefused: the gateway's settings are refused from every
// source, in its one check function, before it fetches or listens.
func TestGatewayConfigRefused(t *testing.T) {
	for _, tc := range []struct {
		name, file, env string
		args            []string
		want            string
	}{
		{"bad bool variable", "", "OAUTHD_GATEWAY_REVOCATION_FEED=off-ish", nil, `OAUTHD_GATEWAY_REVOCATION_FEED: "off-ish" is not true or false`},
		{"feed interval from the file", "gateway:\n  revocation-feed-interval: 10ms\n", "", nil, "--revocation-feed-interval 10ms is too short"},
		{"dpop window flag", "", "", []string{"--dpop-window", "1s"}, "--dpop-window 1s: use a duration between 5s and 10m0s"},
		{"bad feed url variable", "", "OAUTHD_GATEWAY_REVOCATION_FEED_URL=feed", nil, `--revocation-feed-url "feed"`},
		{"global log format", "log-format: xml\n", "", nil, `--log-format "xml": use text or json`},
		{"serve key in the gateway section", "gateway:\n  base-url: https://x\n", "", nil, `gateway.base-url: unknown key (did you mean "serve.base-url"?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearConfigEnv(t)
			if tc.file != "" {
				t.Setenv(configEnv, writeConfig(t, tc.file))
			}
			if tc.env != "" {
				name, val, _ := strings.Cut(tc.env, "=")
				t.Setenv(name, val)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			args := append([]string{"gateway", "--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1", "--issuer", "http://127.0.0.1:1"}, tc.args...)
			err := run(ctx, args, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("gateway: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestUnknownEnvWarned: a misspelt variable is named with the one meant.
func TestUnknownEnvWarned(t *testing.T) {
	clearConfigEnv(t)
	t.Setenv("OAUTHD_CODE_TLL", "1m")
	t.Setenv("OAUTHD_CODE_TTL", "1m")
	t.Setenv("OAUTHD_GATEWAY_TOKEN_CACHE", "5")
	got := unknownEnv()
	want := []string{"OAUTHD_CODE_TLL is set but no setting reads it (did you mean OAUTHD_CODE_TTL?)"}
	if !slices.Equal(got, want) {
		t.Errorf("unknownEnv() = %q; want %q", got, want)
	}
}
