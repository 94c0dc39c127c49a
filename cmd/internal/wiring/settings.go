package wiring

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/pflag"

	"oauthd/keys"
)

// AnnEnv on a flag names its environment variable where the rule (the
// command's prefix + the name in upper snake case) does not (cmd/oauthd's
// config.go reads it).
const AnnEnv = "oauthd_env"

// EnvValue is the one way oauthd reads its environment: the value of the
// variable name and whether it is set to something. A variable that is
// unset or empty counts as not set, so that `OAUTHD_X=` in a unit file
// gives the flag's own default. What a value means (and a value that does
// not parse, which is refused, never replaced by a default) is decided by
// the flag it sets (cmd/oauthd's config.go) or by the caller.
func EnvValue(name string) (string, bool) {
	v := os.Getenv(name)
	return v, v != ""
}

// Globals are the global settings of oauthd (its persistent flags) that
// oauthd-bench takes too.
type Globals struct {
	DB            string
	MasterKeyFile string
	LogLevel      string
	LogFormat     string
}

// AddFlags registers the global settings' flags.
func (g *Globals) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&g.DB, "db", "./oauthd.db", "the bbolt database file, or a postgres:// URL (libpq variables such as PGPASSWORD apply)")
	fs.StringVar(&g.MasterKeyFile, "master-key-file", "", "file holding the 32-byte master key that encrypts signing keys (64 hex digits or base64); env "+MasterKeyEnv+" holds the key itself")
	fs.StringVar(&g.LogLevel, "log-level", "", "debug, info, warn or error (default info for serve, warn otherwise)")
	fs.StringVar(&g.LogFormat, "log-format", "text", "text (logfmt) or json")
}

// Logger is the logger of --log-level (def when not set) and --log-format
// writing to w.
func (g *Globals) Logger(w io.Writer, def slog.Level) (*slog.Logger, error) {
	return NewLogger(w, g.LogLevel, g.LogFormat, def)
}

// MasterKey reads the master key from --master-key-file or
// OAUTHD_MASTER_KEY; nil when neither is set.
func (g *Globals) MasterKey() ([]byte, error) { return MasterKey(g.MasterKeyFile) }

// NewLogger is the logger of --log-level (def when empty) and --log-format
// writing to w.
func NewLogger(w io.Writer, levelName, format string, def slog.Level) (*slog.Logger, error) {
	level := def
	if levelName != "" {
		if err := level.UnmarshalText([]byte(levelName)); err != nil {
			return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", levelName)
		}
	}
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}

// MasterKeyEnv holds the master key itself (--master-key-file names a
// file holding it).
const MasterKeyEnv = "OAUTHD_MASTER_KEY"

// MasterKey reads the master key from file (--master-key-file) or, when
// file is "", from OAUTHD_MASTER_KEY; nil when neither is set.
func MasterKey(file string) ([]byte, error) {
	raw, _ := EnvValue(MasterKeyEnv)
	from := MasterKeyEnv
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read --master-key-file: %w", err)
		}
		raw, from = string(b), file
	}
	if raw == "" {
		return nil, nil
	}
	k, err := keys.ParseMasterKey(raw)
	if err != nil {
		return nil, fmt.Errorf("the master key in %s is not usable: %w; generate one with `openssl rand -hex 32`", from, err)
	}
	return k, nil
}
