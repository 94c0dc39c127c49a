package ident

import (
	"fmt"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/secure/precis"
	"golang.org/x/text/unicode/rangetable"
)

// Joiners that some scripts need inside a word (RFC 5892 Appendix A.1,
// A.2): the only default ignorables a display name may hold ([Name]).
const (
	zwnj = '\u200C' // ZERO WIDTH NON-JOINER
	zwj  = '\u200D' // ZERO WIDTH JOINER
)

// defaultIgnorable is Unicode's Default_Ignorable_Code_Point property
// (UAX #44 §5.3; DerivedCoreProperties.txt), derived here as Unicode
// derives it, from the tables of the Go toolchain's unicode package
// (Unicode [unicode.Version]; the standard library has no DI table of its
// own):
//
//	Other_Default_Ignorable_Code_Point
//	+ Cf (format characters)
//	+ Variation_Selector
//	− White_Space
//	− U+FFF9..U+FFFB (interlinear annotation format characters)
//	− U+13430..U+1343F (Egyptian hieroglyph format characters)
//	− Prepended_Concatenation_Mark (format characters that are visible)
//
// So it follows the toolchain's Unicode version with no list to keep. It
// holds the zero-width spaces and joiners, the bidi controls, the soft
// hyphen, U+034F COMBINING GRAPHEME JOINER, the variation selectors
// (U+FE00..FE0F, U+E0100..E01EF), the Hangul fillers (U+115F, U+1160,
// U+3164, U+FFA0), the Khmer inherent vowels (U+17B4, U+17B5), the
// Mongolian vowel separator and free variation selectors, the tag
// characters (U+E0000..E007F) and the code points reserved for future
// default ignorables (4,174 code points at Unicode 15.0).
var defaultIgnorable = sync.OnceValue(func() *unicode.RangeTable {
	var rs []rune
	rangetable.Visit(rangetable.Merge(unicode.Other_Default_Ignorable_Code_Point, unicode.Cf, unicode.Variation_Selector), func(r rune) {
		switch {
		case unicode.Is(unicode.White_Space, r),
			r >= 0xFFF9 && r <= 0xFFFB,
			r >= 0x13430 && r <= 0x1343F,
			unicode.Is(unicode.Prepended_Concatenation_Mark, r):
			return
		}
		rs = append(rs, r)
	})
	return rangetable.New(rs...)
})

// DefaultIgnorable reports whether r is a Unicode
// Default_Ignorable_Code_Point: a character a renderer shows as nothing
// when it cannot show it otherwise (see defaultIgnorable for how the set
// is derived).
func DefaultIgnorable(r rune) bool { return unicode.Is(defaultIgnorable(), r) }

// blankGlyph reports whether r is a graphic character (a symbol) whose
// glyph is empty by definition: U+2800 BRAILLE PATTERN BLANK (the cell
// with no dot) and U+1D159 MUSICAL SYMBOL NULL NOTEHEAD. Unicode has no
// property for "draws nothing"; every other invisible character is a
// default ignorable, a space, a control or a format character, which
// the rules below take by property. These two are the graphic ones.
func blankGlyph(r rune) bool { return r == 0x2800 || r == 0x1D159 }

// assigned reports whether r has a general category other than Cn in the
// toolchain's Unicode version.
func assigned(r rune) bool {
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.C)
}

// unseen says why r cannot be seen as itself in an identifier, or ""
// when it can: the one list of what [Check] refuses, by Unicode property.
// hidden is true for what hides or reorders text in any string (a
// control, a separator, a default ignorable, a format character), false
// for what is only unfit for an identifier (a private-use or unassigned
// code point, a blank glyph), which a display name may hold ([Name]).
func unseen(r rune) (why string, hidden bool) {
	switch {
	case unicode.Is(unicode.Cc, r):
		return "the control character", true
	case unicode.In(r, unicode.Zl, unicode.Zp):
		return "the line or paragraph separator", true
	case r >= 0xE0000 && r <= 0xE007F:
		return "the hidden tag character", true
	case DefaultIgnorable(r):
		return "the invisible (default ignorable) character", true
	case unicode.Is(unicode.Cf, r):
		return "the format character", true
	case unicode.Is(unicode.Co, r):
		return "the private-use character", false
	case !assigned(r):
		return "the unassigned code point", false
	case blankGlyph(r):
		return "the blank character", false
	}
	return "", false
}

// Check refuses what no email or username may hold, with an error
// wrapping [ErrInvalid]: invalid UTF-8; a control character (Cc: C0,
// DEL, C1); a line or paragraph separator; any default ignorable
// ([DefaultIgnorable]: zero-width characters, bidi controls, variation
// selectors, the combining grapheme joiner, Hangul fillers, tag
// characters…); any other format character (Cf); a private-use or
// unassigned code point; a blank glyph (U+2800 BRAILLE PATTERN BLANK,
// U+1D159). Each can make an identifier show as another one, or as
// nothing, on a page or a terminal. Every entry of a new identifier
// (users add, users import, the login handover, the demo) calls it
// through [Email] or [Username].
func Check(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalid, s)
	}
	for _, r := range s {
		if why, _ := unseen(r); why != "" {
			return fmt.Errorf("%w: %q holds %s %U", ErrInvalid, s, why, r)
		}
	}
	return nil
}

// legacyCheck is the check of the release that gave identifiers one
// canonical form (invalid UTF-8, Cc, Cf, Zl, Zp): what [Key] needs to
// keep every stored identifier's key as it was written.
func legacyCheck(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalid, s)
	}
	for _, r := range s {
		if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
			return fmt.Errorf("%w: %q holds the invisible or control character %U", ErrInvalid, s, r)
		}
	}
	return nil
}

// Name checks a person's display name (the name of `users add` and
// `users import`, the name a platform asserts at the login handover),
// with an error wrapping [ErrInvalid] that says which character and
// where:
//
//   - no control character, line separator, default ignorable or other
//     format character (the hiding half of [Check]), except that ZWNJ (U+200C) and ZWJ (U+200D) may stand where
//     a script needs them: between joining letters or after a virama, as
//     RFC 5892's CONTEXTJ rules say (Persian "می‌خواهم", Devanagari
//     conjuncts). That is decided by golang.org/x/text/secure/precis,
//     which implements those rules, on the word the joiner stands in; a
//     joiner anywhere else (an emoji sequence, the end of a name) is
//     refused with the other invisible characters;
//   - at least one visible character: a letter, digit, punctuation mark
//     or symbol that is not a default ignorable or a blank glyph (nor a
//     private-use or unassigned code point, which a name may hold beside
//     visible ones: a newer emoji than the toolchain knows). A name
//     of Hangul fillers, spaces, combining marks or U+2800 alone shows as
//     nothing (or as another name's blank) and is refused.
//
// Spaces and blank glyphs between visible characters pass: a display
// name is not unique, only an email or a username is.
func Name(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalid, s)
	}
	visible := false
	for i, r := range s {
		if r == zwj || r == zwnj {
			if !joinerNeeded(s, i) {
				return fmt.Errorf("%w: %q holds %U at byte %d, a joiner that is not between letters that need it", ErrInvalid, s, r, i+1)
			}
			continue
		}
		if why, hidden := unseen(r); hidden {
			return fmt.Errorf("%w: %q holds %s %U at byte %d", ErrInvalid, s, why, r, i+1)
		}
		if unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S) && !blankGlyph(r) {
			visible = true
		}
	}
	if !visible {
		return fmt.Errorf("%w: %q has no visible character (a letter, digit, punctuation mark or symbol)", ErrInvalid, s)
	}
	return nil
}

// joinerNeeded reports whether the joiner at byte i of s stands where
// RFC 5892's CONTEXTJ rule allows it: precis's Freeform class (which
// applies the rule) accepts the word around it, the run of letters,
// marks and joiners on both sides.
func joinerNeeded(s string, i int) bool {
	inWord := func(r rune) bool { return r == zwj || r == zwnj || unicode.In(r, unicode.L, unicode.M) }
	start, end := i, i
	for start > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:start])
		if !inWord(r) {
			break
		}
		start -= size
	}
	for end < len(s) {
		r, size := utf8.DecodeRuneInString(s[end:])
		if !inWord(r) {
			break
		}
		end += size
	}
	_, err := precis.NewFreeform().String(s[start:end])
	return err == nil
}
