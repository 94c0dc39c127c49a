package main

import (
	"cmp"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"oauthd/cmd/internal/backend"
	"oauthd/cmd/internal/clitext"
)

// versionInfo is what `oauthd version` and `oauthd --version` print: the
// build (from the Go toolchain's build information, so a plain `go build`
// in a git checkout has it) and the database schemas it reads and writes.
type versionInfo struct {
	Release    string                  `json:"release"`               // the module version: a tag, a pseudo-version, or "(devel)"
	Commit     string                  `json:"commit,omitempty"`      // vcs.revision
	CommitTime string                  `json:"commit_time,omitempty"` // vcs.time
	Modified   bool                    `json:"modified,omitempty"`    // built from a checkout with local changes
	Go         string                  `json:"go"`
	Schemas    []backend.SchemaVersion `json:"schemas"`
}

// buildVersion reads the running binary's version.
func buildVersion() versionInfo {
	v := versionInfo{Release: "(devel)", Go: runtime.Version(), Schemas: backend.SchemaVersions()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Release = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// text is the version as `oauthd version` prints it.
func (v versionInfo) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "oauthd %s\n", v.Release)
	commit := cmp.Or(v.Commit, "unknown (the build holds no VCS information: built outside a git clone, or with -buildvcs=false)")
	if v.CommitTime != "" {
		commit += " (" + v.CommitTime + ")"
	}
	if v.Modified {
		commit += ", with local changes"
	}
	fmt.Fprintf(&b, "commit:  %s\n", commit)
	fmt.Fprintf(&b, "go:      %s\n", v.Go)
	for _, s := range v.Schemas {
		line := fmt.Sprintf("schema:  %s %s", s.Backend, s.Reads)
		if len(s.Upgrades) > 0 {
			line += " (upgrades " + strings.Join(s.Upgrades, ", ") + ")"
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// newVersionCommand prints v, the version root read once (root's --version
// prints it too).
func newVersionCommand(v versionInfo) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print this binary's release, commit, Go version and the database schemas it reads and upgrades",
		Args:  exactArgs(),
		// No database, no settings: it answers whatever the
		// configuration holds (root's PersistentPreRunE reads it).
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				return clitext.JSON(cmd.OutOrStdout(), v)
			}
			for _, line := range strings.SplitAfter(strings.TrimSuffix(v.text(), "\n"), "\n") {
				if err := clitext.Textf(cmd.OutOrStdout(), "%s\n", strings.TrimSuffix(line, "\n")); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {\"release\", \"commit\", \"commit_time\", \"modified\", \"go\", \"schemas\": [{\"backend\", \"reads\", \"upgrades\"}]}")
	return cmd
}
