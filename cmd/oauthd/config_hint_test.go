package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestConfigErrorHintWorks: the error of a file with an unknown key names
// a command that lists every key; that command, run in the same
// environment (OAUTHD_CONFIG still naming the bad file), succeeds and
// lists the key the error suggests.
func TestConfigErrorHintWorks(t *testing.T) {
	clearConfigEnv(t)
	t.Setenv(configEnv, writeConfig(t, "serve:\n  code-tll: 1m\n"))
	run1 := func(args ...string) (string, string, error) {
		var out, errb bytes.Buffer
		err := run(t.Context(), args, strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), err
	}
	_, stderr, err := run1("config", "print")
	if err == nil {
		t.Fatal("config print of a file with an unknown key succeeded")
	}
	if !strings.Contains(stderr, `did you mean "serve.code-ttl"`) {
		t.Fatalf("stderr %q; want the unknown key and its nearest key", stderr)
	}
	m := regexp.MustCompile("`oauthd ([^`]+)`").FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("stderr %q names no command to run", stderr)
	}
	args := shellWords(t, m[1])
	out, stderr2, err := run1(args...)
	if err != nil {
		t.Fatalf("the command the error names, oauthd %s, fails too: %v\n%s", m[1], err, stderr2)
	}
	if !strings.Contains(out, "serve.code-ttl") {
		t.Errorf("oauthd %s = %q; want every key, serve.code-ttl among them", m[1], out)
	}
}

// shellWords splits s as a POSIX shell would for plain words and
// single-quoted strings, the only forms the hint uses.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
			}
			inWord = false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
