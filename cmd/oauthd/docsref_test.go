package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"oauthd/issuer"
	"oauthd/keys"
	"oauthd/keys/verify"
)

// tocMinLines is the length above which a doc needs a table of contents.
const tocMinLines = 150

// userDocs are README.md and docs/*.md, from this package's directory.
func userDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join("..", "..", "docs", "decisions"), filepath.Join("..", "..", "README.md"))
	var out []string
	for _, d := range docs {
		fi, err := os.Stat(d)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			more, _ := filepath.Glob(filepath.Join(d, "*.md"))
			out = append(out, more...)
			continue
		}
		out = append(out, d)
	}
	return out
}

var tocLink = regexp.MustCompile(`^\s*[-*] \[[^\]]+\]\(#([^)]+)\)`)

// TestDocsHaveContents: every doc over 150 lines has a "## Contents"
// section before its first other "## " heading, and that list links to
// every "## " heading of the doc (and to nothing else).
func TestDocsHaveContents(t *testing.T) {
	for _, path := range userDocs(t) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		if len(lines) <= tocMinLines {
			continue
		}
		name := strings.TrimPrefix(path, filepath.Join("..", "..")+string(filepath.Separator))
		var headings []string
		deeper := map[string]bool{} // "### " and deeper: the contents may list them too
		linked := map[string]bool{}
		inContents, seenContents, fence := false, false, false
		for _, l := range lines {
			if strings.HasPrefix(l, "```") {
				fence = !fence
			}
			if fence {
				continue
			}
			if strings.HasPrefix(l, "### ") {
				deeper[githubSlug(strings.TrimLeft(l, "# "))] = true
			}
			if h, ok := strings.CutPrefix(l, "## "); ok {
				if h == "Contents" {
					inContents, seenContents = true, true
					continue
				}
				if !seenContents {
					t.Errorf("%s (%d lines): heading %q comes before a \"## Contents\" section; a doc over %d lines starts with its table of contents", name, len(lines), h, tocMinLines)
					break
				}
				inContents = false
				headings = append(headings, h)
				continue
			}
			if m := tocLink.FindStringSubmatch(l); inContents && m != nil {
				linked[m[1]] = true
			}
		}
		if !seenContents {
			t.Errorf("%s has %d lines and no \"## Contents\" section", name, len(lines))
			continue
		}
		want := map[string]bool{}
		for _, h := range headings {
			a := githubSlug(h)
			want[a] = true
			if !linked[a] {
				t.Errorf("%s: the contents do not link to %q (#%s)", name, h, a)
			}
		}
		for a := range linked {
			if !want[a] && !deeper[a] {
				t.Errorf("%s: the contents link to #%s, which is no heading", name, a)
			}
		}
	}
}

// docDefault is a default that the docs state in words: where it is
// said (a pattern whose first group is the figure, with its unit in the
// second group or in unit) and the constant it must equal.
type docDefault struct {
	name    string
	pattern *regexp.Regexp
	unit    time.Duration // when the pattern captures no unit
	want    time.Duration
}

var docDefaults = []docDefault{
	{"the resource servers' JWKS max-age (keys.DefaultJWKSMaxAge)",
		regexp.MustCompile(`(?i)JWKS(?: Cache-Control)? max-age[ (,:]*(?:is |of |default |\x60)?(\d+)\s*(s|seconds?|minutes?|min)\b`), 0, keys.DefaultJWKSMaxAge},
	{"JWKSMaxAge's default (keys.DefaultJWKSMaxAge)",
		regexp.MustCompile(`JWKSMaxAge[^\n]*?default (\d+)(s)\b`), 0, keys.DefaultJWKSMaxAge},
	{"the access token's lifetime (keys.DefaultTokenTTL)",
		regexp.MustCompile(`(?i)access tokens?(?: \(RFC 9068 JWTs, | live | lifetime | expire after )(\d+) ?(s|minutes)\b`), 0, keys.DefaultTokenTTL},
	{"expires_in of an access token (keys.DefaultTokenTTL)",
		regexp.MustCompile(`"token_type": "\w+", "expires_in": (\d+)()`), time.Second, keys.DefaultTokenTTL},
	{"exp of an access token (keys.DefaultTokenTTL)",
		regexp.MustCompile("`exp` = `iat` \\+ (\\d+) (s)"), 0, keys.DefaultTokenTTL},
	{"TokenTTL's default (keys.DefaultTokenTTL)",
		regexp.MustCompile(`TokenTTL[^\n]*?default (\d+)(s)\b`), 0, keys.DefaultTokenTTL},
	{"an authorization code's lifetime (issuer.DefaultCodeTTL)",
		regexp.MustCompile(`(?i)(?:codes are single-use and live|exchange it within) (\d+) ?(s|seconds?|minutes?)\b`), 0, issuer.DefaultCodeTTL},
	{"the refresh-token reuse grace (issuer.DefaultRefreshReuseGrace)",
		regexp.MustCompile("(?i)(?:refresh-reuse-grace`, default|reuse grace is) (\\d+) ?(s|seconds)\\b"), 0, issuer.DefaultRefreshReuseGrace},
	{"the revoked-grants feed's interval (verify.DefaultFeedInterval)",
		regexp.MustCompile(`(?i)(?:poll interval \(about|polls the feed every|feed interval plus its max-age \()\s*(\d+) ?(s)\b`), 0, verify.DefaultFeedInterval},
}

// durationOf reads "30", "minutes" as 30 minutes; without a unit, def.
func durationOf(n, unit string, def time.Duration) (time.Duration, error) {
	v, err := strconv.Atoi(n)
	if err != nil {
		return 0, err
	}
	units := map[string]time.Duration{"": def, "s": time.Second, "second": time.Second, "seconds": time.Second,
		"min": time.Minute, "minute": time.Minute, "minutes": time.Minute, "h": time.Hour, "hour": time.Hour,
		"hours": time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour}
	u, ok := units[strings.ToLower(unit)]
	if !ok || u == 0 {
		return 0, fmt.Errorf("unit %q", unit)
	}
	return time.Duration(v) * u, nil
}

// TestDocsNameTheCodesDefaults: wherever a doc states one of the defaults
// above (token lifetimes, JWKS max-ages, the feed's interval…), the
// figure equals the code's constant, as TestConfigDoc does for flags.
// CHANGELOG.md is history and is not checked.
func TestDocsNameTheCodesDefaults(t *testing.T) {
	found := map[string]int{}
	for _, path := range userDocs(t) {
		if filepath.Base(path) == "CHANGELOG.md" {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(path, filepath.Join("..", "..")+string(filepath.Separator))
		for i, line := range strings.Split(string(b), "\n") {
			for _, d := range docDefaults {
				for _, m := range d.pattern.FindAllStringSubmatch(line, -1) {
					got, err := durationOf(m[1], m[2], d.unit)
					if err != nil {
						t.Errorf("%s:%d: %q: %v", name, i+1, m[0], err)
						continue
					}
					found[d.name]++
					if got != d.want {
						t.Errorf("%s:%d: %q says %s for %s; the code's is %s", name, i+1, m[0], got, d.name, d.want)
					}
				}
			}
		}
	}
	// Each pattern must still find what it checks: one that matches
	// nothing checks nothing.
	for _, d := range docDefaults {
		if found[d.name] == 0 {
			t.Errorf("no doc states %s any more (pattern %s): drop the check or fix the pattern", d.name, d.pattern)
		}
	}
}

// diaryMarks are words that only a diary uses: who did what, on which
// branch, in which issue. A reference doc states the rule and its reason
// as of today; history lives in git and docs/CHANGELOG.md. The list is
// small and exact, so that it cannot fire on a rule ("test helpers", "the
// leading byte" and "an issued token" pass).
var diaryMarks = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\bissues? #?[0-9]+\b`),                                      // "issue 27", "issues 22 and 23"
	regexp.MustCompile(`(?i)\bthis (?:branch|session)\b`),                               // where the work was done
	regexp.MustCompile(`(?i)\bthe lead(?:'s)?(?:$|[.,;:)]| [^t])`),                      // who merges it (not "the lead-in", "the lead time")
	regexp.MustCompile(`(?i)\b(?:red-team|measuring) helpers?\b`),                       // who found or measured it
	regexp.MustCompile(`(?i)\bhelpers?(?:'s?)? (?:branch|session|worktree|report)s?\b`), // a helper's work
}

// diaryIn returns the diary marks of text, one "line N: match" each.
func diaryIn(text string) []string {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		for _, re := range diaryMarks {
			for _, m := range re.FindAllString(line, -1) {
				out = append(out, fmt.Sprintf("line %d: %q", i+1, m))
			}
		}
	}
	return out
}

// TestDocsReadAsReference: README.md and docs/*.md (not CHANGELOG.md,
// which is history, nor docs/decisions/, which record when and why a
// choice was made) name no issue, branch, session, lead or helper.
func TestDocsReadAsReference(t *testing.T) {
	t.Run("marks", func(t *testing.T) {
		diary := "Measured on this branch.\nFound by a red-team helper (issue 27).\nThe lead merges it; this session's figures.\nsee the helper's branch"
		if got := diaryIn(diary); len(got) != 6 {
			t.Errorf("diaryIn found %d marks in a diary, want 6: %q", len(got), got)
		}
		reference := "The shared helpers of e2e. Test helpers imported only by tests.\nThe leading byte of an issued token; issuer 2 issues tokens.\nA session branch of the code; the lead-in, the lead time."
		if got := diaryIn(reference); len(got) != 0 {
			t.Errorf("diaryIn fires on reference text: %q", got)
		}
	})
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join("..", "..", "README.md"))
	checked := 0
	for _, path := range docs {
		base := filepath.Base(path)
		if base == "CHANGELOG.md" {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		marks := diaryIn(string(b))
		checked++
		for _, m := range marks {
			t.Errorf("%s %s reads as a diary: state the rule and its reason as of today; history goes to git and docs/CHANGELOG.md", base, m)
		}
	}
	if checked < 10 {
		t.Errorf("only %d docs checked: the glob found too few", checked)
	}
}
