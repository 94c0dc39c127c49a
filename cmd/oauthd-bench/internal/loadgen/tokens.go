package loadgen

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ReadTokens reads a file of refresh tokens, one a line; blank lines and
// surrounding space are skipped.
func ReadTokens(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			out = append(out, t)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	return out, nil
}

// WriteTokens replaces path with toks, one a line, in mode 0600 (the
// lines are live credentials), through a rename so that a reader never
// sees half a file.
func WriteTokens(path string, toks []string) error {
	tmp := path + ".tmp"
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("write tokens: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write tokens: %w", err)
	}
	return nil
}

// RSSMiB is this process's resident set size (Linux), or 0.
func RSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}
