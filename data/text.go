package data

import (
	"fmt"
	"unicode/utf8"
)

// UnsafeRune says why r must not be shown as it is, or "" when it may: a
// C0 control character (U+0000–U+001F, tab and newline included), DEL
// (U+007F) or a C1 control character (U+0080–U+009F) can drive a terminal
// (ESC[2J clears it, ESC[8m hides what follows, CR and LF start a forged
// line); a bidirectional embedding, override or isolate (U+202A–U+202E,
// U+2066–U+2069) reorders what follows it, on a terminal or a page; an
// invisible mark (zero-width space U+200B, the directional marks U+200E,
// U+200F and U+061C, the word joiner and invisible operators U+2060–U+2064,
// the byte order mark U+FEFF) makes two names that read the same differ, or
// turns the direction of the text around it; a line or paragraph separator
// (U+2028, U+2029) starts a forged line on some terminals and pages. The
// joiners U+200C and U+200D pass: Persian and the Indic scripts spell words
// with them, and emoji sequences are built with them. It is the one rule for text a person reads: names are refused with it
// ([CheckDisplayText]), and the command line escapes what it finds with it.
func UnsafeRune(r rune) string {
	switch {
	case r < 0x20, r == 0x7f:
		return fmt.Sprintf("a control character (U+%04X)", r)
	case r >= 0x80 && r <= 0x9f:
		return fmt.Sprintf("a C1 control character (U+%04X)", r)
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return fmt.Sprintf("a bidirectional override (U+%04X)", r)
	case r == 0x200b, r == 0x200e, r == 0x200f, r == 0x061c, r >= 0x2060 && r <= 0x2064, r == 0xfeff:
		return fmt.Sprintf("an invisible character (U+%04X)", r)
	case r == 0x2028, r == 0x2029:
		return fmt.Sprintf("a line separator (U+%04X)", r)
	}
	return ""
}

// CheckDisplayText returns a [*RuleError] for field when s is not valid
// UTF-8 or holds a character [UnsafeRune] refuses, saying which and where;
// nil otherwise. Names entered by people (client and user names, the name
// a platform asserts at login) go through it.
func CheckDisplayText(field, s string) error {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return ruleErr(field, "is not valid UTF-8 (byte %d)", i+1)
			}
		}
		if why := UnsafeRune(r); why != "" {
			return ruleErr(field, "contains %s at byte %d; use printable text only", why, i+1)
		}
	}
	return nil
}
