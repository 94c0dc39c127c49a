package data_test

import (
	"errors"
	"strings"
	"testing"

	"oauthd/data"
)

// TestCheckDisplayText: control characters (C0, DEL, C1), bidi
// overrides, invisible marks and line separators are refused, with a sentence naming the character; other
// text, in any script, passes.
func TestCheckDisplayText(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // in the error; "" for none
	}{
		{"plain", "Acme Calendar", ""},
		{"accents and scripts", "Zoë Ärger 日本語 العربية", ""},
		{"emoji and ZWJ", "👩‍💻 team", ""},
		{"ESC clear screen", "a\x1b[2Jb", "a control character (U+001B) at byte 2"},
		{"ESC conceal", "\x1b[8mhidden", "a control character (U+001B) at byte 1"},
		{"CR", "a\rb", "U+000D"},
		{"LF", "a\nscopes: PROFILE_READ", "U+000A"},
		{"tab", "a\tb", "U+0009"},
		{"NUL", "a\x00", "U+0000"},
		{"DEL", "a\x7f", "U+007F"},
		{"C1 CSI", "a\u009b2J", "a C1 control character (U+009B)"},
		{"RLO", "abc\u202Etxt.exe", "a bidirectional override (U+202E)"},
		{"LRE", "\u202A", "U+202A"},
		{"PDF", "\u202C", "U+202C"},
		{"RLI", "\u2067x", "U+2067"},
		{"PDI", "x\u2069", "U+2069"},
		{"zero-width space", "Acme\u200BCalendar", "an invisible character (U+200B) at byte 5"},
		{"LRM", "Acme\u200E", "an invisible character (U+200E)"},
		{"RLM", "\u200FAcme", "an invisible character (U+200F)"},
		{"ALM", "a\u061Cb", "U+061C"},
		{"word joiner", "a\u2060b", "U+2060"},
		{"invisible plus", "a\u2064b", "U+2064"},
		{"BOM", "\uFEFFAcme", "U+FEFF"},
		{"line separator", "a\u2028scopes: PROFILE_READ", "a line separator (U+2028)"},
		{"paragraph separator", "a\u2029b", "U+2029"},
		{"ZWNJ in Persian", "می\u200Cخواهم", ""},
		{"invalid UTF-8", "a\x9bb", "not valid UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := data.CheckDisplayText("name", tc.in)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckDisplayText(%q) = %v; want nil", tc.in, err)
				}
				return
			}
			if !errors.Is(err, data.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "name: ") {
				t.Fatalf("CheckDisplayText(%q) = %v; want ErrInvalid naming %q", tc.in, err, tc.want)
			}
		})
	}
}
