package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestConfigPrint: config print masks secrets and says where each value
// came from, in text and JSON.
func TestConfigPrint(t *testing.T) {
	clearConfigEnv(t)
	file := writeConfig(t, "db: postgres://ops:dbpass-1@db.example/oauthd?sslmode=disable&password=dbpass-2\n"+
		"serve:\n  code-ttl: 2m\ngateway:\n  upstream: http://svc:uppass-3@127.0.0.1:3000\n  issuer: https://auth.example\n")
	t.Setenv("OAUTHD_MASTER_KEY", strings.Repeat("ab", 32))
	t.Setenv("OAUTHD_REFRESH_MAX", "100h")
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"config", "print", "--config", file, "--json", "--log-level", "debug"}, strings.NewReader(""), &out, &errb); err != nil {
		t.Fatalf("config print: %v %s", err, errb.String())
	}
	for _, secret := range []string{"dbpass-1", "dbpass-2", "uppass-3", strings.Repeat("ab", 32)} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("config print shows the secret %q:\n%s", secret, out.String())
		}
	}
	var got struct {
		File     string           `json:"config_file"`
		Settings []printedSetting `json:"settings"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("not one JSON value: %v\n%s", err, out.String())
	}
	byKey := map[string]printedSetting{}
	for _, s := range got.Settings {
		byKey[s.Key] = s
	}
	for _, tc := range []struct {
		key, source string
		value       any
	}{
		{"db", fromFile, "postgres://ops:xxxxx@db.example/oauthd?sslmode=disable&password=xxxxx"},
		{"master-key", fromEnv, masked},
		{"log-level", fromFlag, "debug"},
		{"serve.code-ttl", fromFile, "2m0s"},
		{"serve.refresh-max", fromEnv, "100h0m0s"},
		{"serve.demo", fromDefault, false},
		{"serve.password-slots", fromDefault, float64(0)},
		{"serve.trusted-proxy", fromDefault, []any{}},
		{"gateway.upstream", fromFile, "http://svc:xxxxx@127.0.0.1:3000"},
		{"gateway.listen", fromDefault, "127.0.0.1:8081"},
	} {
		s, ok := byKey[tc.key]
		gotV, _ := json.Marshal(s.Value)
		wantV, _ := json.Marshal(tc.value)
		if !ok || s.Source != tc.source || !bytes.Equal(gotV, wantV) {
			t.Errorf("%s = %s from %q; want %s from %q", tc.key, gotV, s.Source, wantV, tc.source)
		}
	}
	if got.File != file {
		t.Errorf("config_file %q; want %q", got.File, file)
	}
	if len(byKey) != len(got.Settings) {
		t.Errorf("a key printed twice: %d settings, %d keys", len(got.Settings), len(byKey))
	}

	out.Reset()
	if err := run(context.Background(), []string{"config", "print", "--config", file}, strings.NewReader(""), &out, &errb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"config file: " + file, "serve.refresh-max", "env OAUTHD_REFRESH_MAX", "file " + file, "********"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "dbpass") || strings.Contains(out.String(), "uppass") {
		t.Errorf("text output shows a password:\n%s", out.String())
	}
}

// TestShownValueMasksSecrets: a flag marked secret never shows its value.
func TestShownValueMasksSecrets(t *testing.T) {
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.String("token", "", "")
	_ = fs.SetAnnotation("token", annSecret, []string{"true"})
	f := fs.Lookup("token")
	if got := shownValue(f); got != "" {
		t.Errorf("unset secret shown as %v; want empty", got)
	}
	_ = f.Value.Set("s3cr3t")
	if got := shownValue(f); got != masked {
		t.Errorf("secret shown as %v; want %s", got, masked)
	}
	fs.Int("pin", 0, "")
	_ = fs.SetAnnotation("pin", annSecret, []string{"true"})
	if err := setValue(fs.Lookup("pin"), "12x34"); err == nil || strings.Contains(err.Error(), "12x34") {
		t.Errorf("a bad secret value: %v; want an error that does not echo it", err)
	}
}
