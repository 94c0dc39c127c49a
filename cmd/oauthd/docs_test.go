package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository's root from this package's directory.
var repoRoot = filepath.Join("..", "..")

// docFiles are README.md and every Markdown file under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(repoRoot, "README.md")}
	err := filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	// inlineLink is [text](target) or ![alt](target), with an optional title.
	inlineLink = regexp.MustCompile(`!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refLink is a reference definition: [label]: target
	refLink     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	heading     = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlAnchor  = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	codeSpan    = regexp.MustCompile("`+[^`]*`+")
	mdLinkInTxt = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// eachLine calls fn with each line of a Markdown file outside fenced code
// blocks and its line number (from 1).
func eachLine(text string, fn func(n int, line string)) {
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		trim := strings.TrimLeft(line, " ")
		if fence == "" && (strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~")) {
			fence = trim[:3]
			continue
		}
		if fence != "" {
			if strings.HasPrefix(trim, fence) {
				fence = ""
			}
			continue
		}
		fn(i+1, line)
	}
}

// mdLines are the lines of a Markdown file outside fenced code blocks.
func mdLines(text string) []string {
	var out []string
	eachLine(text, func(_ int, line string) { out = append(out, line) })
	return out
}

// githubSlug is the anchor GitHub gives a heading of this text: the
// rendered text lower-cased, every character but letters, digits, spaces,
// '-' and '_' dropped, spaces made '-'.
func githubSlug(text string) string {
	text = mdLinkInTxt.ReplaceAllString(text, "$1")
	text = strings.ReplaceAll(text, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors are the anchors of a Markdown file: its headings' slugs (a
// repeated one gets -1, -2, … as on GitHub) and explicit <a name|id>.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range mdLines(text) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := githubSlug(m[2])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// links are the link targets of a Markdown file with their line numbers,
// outside code blocks and code spans.
func links(text string) (targets []string, lineNos []int) {
	eachLine(text, func(n int, line string) {
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			targets, lineNos = append(targets, m[1]), append(lineNos, n)
		}
		if m := refLink.FindStringSubmatch(line); m != nil {
			targets, lineNos = append(targets, m[1]), append(lineNos, n)
		}
	})
	return targets, lineNos
}

// TestDocLinks: every relative link in README.md and docs/ reaches a file
// or directory of the repository, and every #anchor a heading (GitHub's
// anchor of it) or an <a name> of the file it points into.
func TestDocLinks(t *testing.T) {
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := cache[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		cache[path] = anchors(string(b))
		return cache[path], nil
	}
	checked := 0
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, file)
		targets, lineNos := links(string(b))
		for i, target := range targets {
			if u := strings.ToLower(target); strings.Contains(u, "://") || strings.HasPrefix(u, "mailto:") {
				continue
			}
			checked++
			path, frag, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: link %q: no such file or directory", rel, lineNos[i], target)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s:%d: link %q: an anchor into a file that is not Markdown", rel, lineNos[i], target)
				continue
			}
			a, err := anchorsOf(dest)
			if err != nil {
				t.Errorf("%s:%d: link %q: %v", rel, lineNos[i], target, err)
				continue
			}
			if !a[frag] {
				t.Errorf("%s:%d: link %q: %s has no heading with the anchor #%s", rel, lineNos[i], target, filepath.Base(dest), frag)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found in README.md and docs/; the parser is broken")
	}
}

// TestGithubSlug: the anchors GitHub gives headings of the forms the docs use.
func TestGithubSlug(t *testing.T) {
	for text, want := range map[string]string{
		"Backups and restores":                   "backups-and-restores",
		"Browser clients (CORS)":                 "browser-clients-cors",
		"`store copy`: moving to PostgreSQL":     "store-copy-moving-to-postgresql",
		"DPoP and pushed authorization requests": "dpop-and-pushed-authorization-requests",
		"Grants: what a decision reaches":        "grants-what-a-decision-reaches",
		"1.5 A [link](X.md) – dash":              "15-a-link--dash",
	} {
		if got := githubSlug(text); got != want {
			t.Errorf("githubSlug(%q) = %q; want %q", text, got, want)
		}
	}
	a := anchors("# A\n## A\n```\n# not a heading\n```\n## A\n")
	for _, want := range []string{"a", "a-1", "a-2"} {
		if !a[want] {
			t.Errorf("anchors of three headings A = %v; want %s", a, want)
		}
	}
	if a["not-a-heading"] {
		t.Error("a # line in a code block counted as a heading")
	}
}

// iniSettings are the key = value lines of an ini text, comments dropped.
func iniSettings(text string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, ";")
		k, v, ok := strings.Cut(line, "=")
		if ok && !strings.HasPrefix(strings.TrimSpace(k), "#") {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

// TestPgBouncerSample: the pgbouncer.ini of docs/POSTGRESQL.md and the
// one scripts/pgbouncer.sh writes for the tests agree on the settings
// oauthd's behaviour depends on: transaction pooling, and a 1 s
// server_login_retry (PgBouncer's default of 15 s adds up to 15 s to every
// recovery after a PostgreSQL restart).
func TestPgBouncerSample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "POSTGRESQL.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```ini\n")
	sample, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/POSTGRESQL.md has no ```ini block")
	}
	script, err := os.ReadFile(filepath.Join(repoRoot, "scripts", "pgbouncer.sh"))
	if err != nil {
		t.Fatal(err)
	}
	d, s := iniSettings(sample), iniSettings(string(script))
	for key, want := range map[string]string{"pool_mode": "transaction", "server_login_retry": "1"} {
		if d[key] != want {
			t.Errorf("docs/POSTGRESQL.md's pgbouncer.ini: %s = %q; want %q", key, d[key], want)
		}
		if s[key] != want {
			t.Errorf("scripts/pgbouncer.sh's pgbouncer.ini: %s = %q; want %q", key, s[key], want)
		}
	}
}
