package clitext

import "testing"

// TestEscapeText: every character data.UnsafeRune names, and every byte
// that is not UTF-8, is shown escaped; other text, in any script, as is.
func TestEscapeText(t *testing.T) {
	tests := []struct {
		name, in  string
		keepLines bool
		want      string
	}{
		{"plain", "Acme Calendar", false, "Acme Calendar"},
		{"scripts", "Zoë 日本語 العربية 👩‍💻", false, "Zoë 日本語 العربية 👩‍💻"},
		{"clear screen", "a\x1b[2Jb", false, `a\x1b[2Jb`},
		{"conceal", "\x1b[8mhidden", false, `\x1b[8mhidden`},
		{"forged line", "x\r\nscopes: PROFILE_READ", false, `x\x0d\x0ascopes: PROFILE_READ`},
		{"tab", "a\tb", false, `a\x09b`},
		{"DEL and NUL", "\x7f\x00", false, `\x7f\x00`},
		{"C1 CSI", "a\u009b2J", false, `a\u009b2J`},
		{"raw 0x9b byte", "a\x9b2J", false, `a\x9b2J`},
		{"RLO", "abc\u202Etxt.exe", false, `abc\u202etxt.exe`},
		{"isolates", "\u2066x\u2069", false, `\u2066x\u2069`},
		{"lines kept", "line 1\n\tline 2\x1b[2J", true, "line 1\n\tline 2\\x1b[2J"},
		{"CR not kept", "a\rb", true, `a\x0db`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Escape(tc.in, tc.keepLines); got != tc.want {
				t.Fatalf("Escape(%q, %v) = %q; want %q", tc.in, tc.keepLines, got, tc.want)
			}
		})
	}
}
