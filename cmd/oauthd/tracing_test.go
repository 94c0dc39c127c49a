package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"oauthd/cmd/internal/wiring"
)

// tracingOf is the tracing settings of a configured command (serve or
// gateway) with args, as its options hold them after configure.
func tracingOf(t *testing.T, cmd string, args ...string) (wiring.Tracing, map[string]*setting, error) {
	t.Helper()
	m, err := configured(t, cmd, args...)
	if err != nil {
		return wiring.Tracing{}, m, err
	}
	v := func(name string) string { return m[cmd+"."+name].flag.Value.String() }
	return wiring.Tracing{Exporter: v("otel-traces-exporter"), Endpoint: v("otel-exporter-otlp-endpoint"),
		Protocol: v("otel-exporter-otlp-protocol"), ServiceName: v("otel-service-name"),
		Sampler: v("otel-traces-sampler"), SamplerArg: v("otel-traces-sampler-arg")}, m, nil
}

// TestTracingSettings: traces are off by default and turned on by the
// standard variables, or by the flags and file keys of the same names;
// OTEL_TRACES_EXPORTER=none and OTEL_SDK_DISABLED turn them off.
func TestTracingSettings(t *testing.T) {
	// The configuration file docs/TRACING.md shows.
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "TRACING.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, yaml, _ := strings.Cut(string(doc), "```yaml\n")
	yaml, _, _ = strings.Cut(yaml, "```")
	if !strings.Contains(yaml, "otel-exporter-otlp-endpoint") {
		t.Fatalf("docs/TRACING.md has no yaml example of the tracing keys: %q", yaml)
	}
	file := writeConfig(t, yaml)
	for _, tc := range []struct {
		name   string
		cmd    string
		env    map[string]string
		args   []string
		on     bool
		source string // of the endpoint setting, when the case names one
	}{
		{"default", "serve", nil, nil, false, fromDefault},
		{"the standard variable", "serve", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, nil, true, fromEnv},
		{"the signal's own variable", "serve", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, nil, true, fromDefault},
		{"the flag", "gateway", nil, []string{"--otel-exporter-otlp-endpoint=http://127.0.0.1:4318"}, true, fromFlag},
		{"the file", "serve", map[string]string{"OAUTHD_CONFIG": file}, nil, true, fromFile},
		{"the file's exporter", "gateway", map[string]string{"OAUTHD_CONFIG": file}, nil, true, fromDefault},
		{"exporter otlp alone", "serve", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, nil, true, fromDefault},
		{"exporter none wins", "serve", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, nil, false, fromEnv},
		{"SDK disabled", "serve", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, nil, false, fromEnv},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearConfigEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			o, m, err := tracingOf(t, tc.cmd, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Check(); err != nil {
				t.Fatalf("check: %v", err)
			}
			if o.Enabled() != tc.on {
				t.Errorf("enabled = %v; want %v (%+v)", o.Enabled(), tc.on, o)
			}
			if got := m[tc.cmd+".otel-exporter-otlp-endpoint"].source; got != tc.source {
				t.Errorf("endpoint's source %s; want %s", got, tc.source)
			}
		})
	}
	t.Run("the gateway's sampler from the file", func(t *testing.T) {
		clearConfigEnv(t)
		t.Setenv("OAUTHD_CONFIG", file)
		o, _, err := tracingOf(t, "gateway")
		if err != nil || o.Sampler != "parentbased_traceidratio" || o.SamplerArg != "0.25" {
			t.Fatalf("%+v %v", o, err)
		}
		if s, err := o.NewSampler(); err != nil || !strings.Contains(s.Description(), "TraceIDRatioBased{0.25}") {
			t.Errorf("sampler %v %v", s, err)
		}
	})
}

// TestTracingSettingsRefused: a value oauthd cannot honour is refused at
// the start, naming the flag and its variable and what to use.
func TestTracingSettingsRefused(t *testing.T) {
	for _, tc := range []struct{ env, value, want string }{
		{"OTEL_TRACES_EXPORTER", "zipkin", "use otlp or none"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", "use http/protobuf or grpc"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4317", "use an http(s) URL"},
		{"OTEL_TRACES_SAMPLER", "sometimes", "use always_on, always_off"},
		{"OTEL_TRACES_SAMPLER_ARG", "2", "between 0 and 1"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			clearConfigEnv(t)
			t.Setenv(tc.env, tc.value)
			if tc.env == "OTEL_TRACES_SAMPLER_ARG" {
				t.Setenv("OTEL_TRACES_SAMPLER", "traceidratio")
			}
			for _, cmd := range []string{"serve", "gateway"} {
				o, _, err := tracingOf(t, cmd)
				if err != nil {
					t.Fatal(err)
				}
				err = o.Check()
				if err == nil || !strings.Contains(err.Error(), tc.env) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: check = %v; want an error naming %s and saying %q", cmd, err, tc.env, tc.want)
				}
			}
		})
	}
}
