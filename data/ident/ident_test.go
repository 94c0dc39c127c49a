package ident_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"oauthd/data/ident"
)

func TestEmail(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		bad            bool
	}{
		{"ascii", "sam@plat.test", "sam@plat.test", false},
		{"mixed case", "Sam.Fox@Plat.TEST", "sam.fox@plat.test", false},
		{"long s folds to s", "\u017fam@plat.test", "sam@plat.test", false},
		{"kelvin sign is K", "\u212Aim@plat.test", "kim@plat.test", false},
		{"fullwidth local part", "\uff53\uff41\uff4d@plat.test", "sam@plat.test", false},
		{"fullwidth domain", "sam@\uff50\uff4c\uff41\uff54.test", "sam@plat.test", false},
		{"sharp s is ss", "stra\u00dfe@plat.test", "strasse@plat.test", false},
		{"capital sharp s is ss", "STRA\u1e9eE@plat.test", "strasse@plat.test", false},
		{"IDN domain to punycode", "ann@B\u00fccher.Example", "ann@xn--bcher-kva.example", false},
		{"punycode domain stays", "ann@xn--bcher-kva.example", "ann@xn--bcher-kva.example", false},
		{"trailing dot", "ann@plat.test.", "ann@plat.test", false},
		{"last @ splits", "\"a@b\"@plat.test", "\"a@b\"@plat.test", false},
		{"no @", "sam", "", true},
		{"no domain", "sam@", "", true},
		{"no local part", "@plat.test", "", true},
		{"bad domain", "sam@pl_at.test", "", true},
		{"NUL", "sam\x00@plat.test", "", true},
		{"newline", "sam\n@plat.test", "", true},
		{"C1 control", "sam\u0085@plat.test", "", true},
		{"RTL override", "\u202emas@plat.test", "", true},
		{"LTR isolate", "sam\u2066@plat.test", "", true},
		{"RLM mark", "sam\u200f@plat.test", "", true},
		{"zero-width space", "s\u200bam@plat.test", "", true},
		{"invalid UTF-8", "sam\xff@plat.test", "", true},
		// Issue 31: every default ignorable, and what shows as nothing.
		{"combining grapheme joiner", "sa\u034fm@plat.test", "", true},
		{"variation selector 16", "sam\ufe0f@plat.test", "", true},
		{"variation selector 17", "sam\U000e0100@plat.test", "", true},
		{"hangul filler", "s\u3164am@plat.test", "", true},
		{"halfwidth hangul filler", "sam\uffa0@plat.test", "", true},
		{"hangul choseong filler", "\u115fsam@plat.test", "", true},
		{"khmer inherent vowel", "sam\u17b4@plat.test", "", true},
		{"mongolian vowel separator", "sam\u180e@plat.test", "", true},
		{"tag character", "sam\U000e0041@plat.test", "", true},
		{"soft hyphen in the domain", "sam@exam\u00adple.com", "", true},
		{"variation selector in the domain", "sam@example\ufe0f.com", "", true},
		{"reserved default ignorable", "sam\u2065@plat.test", "", true},
		{"interlinear annotation", "sam\ufff9@plat.test", "", true},
		{"braille blank", "sam\u2800@plat.test", "", true},
		{"no-break space", "sam\u00a0@plat.test", "", true},
		{"ideographic space", "sam\u3000@plat.test", "", true},
		{"private use", "sam\ue000@plat.test", "", true},
		{"unassigned", "sam\U000f0000x\u0378@plat.test", "", true},
		{"combining accent is visible", "sa\u0301m@plat.test", "s\u00e1m@plat.test", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ident.Email(tc.in)
			if tc.bad {
				if !errors.Is(err, ident.ErrInvalid) {
					t.Fatalf("Email(%q) = %q, %v; want ErrInvalid", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Email(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
			if k := ident.Key(tc.in); k != tc.want {
				t.Errorf("Key(%q) = %q; want %q (as Email)", tc.in, k, tc.want)
			}
		})
	}
}

func TestUsername(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		bad            bool
	}{
		{"ascii", "sam", "sam", false},
		{"mixed case", "SaM", "sam", false},
		{"kelvin sign is K", "\u212Aim", "kim", false},
		{"fullwidth letters", "\uff44\uff41\uff4e", "dan", false},
		{"sharp s is ss", "Stra\u00dfe", "strasse", false},
		{"symbols", "a.b-c_d+e", "a.b-c_d+e", false},
		{"greek final sigma", "\u039f\u03a3", "\u03bf\u03c3", false},
		{"long s refused", "\u017fam", "", true},
		// Digits only name a user ID wherever a user is named (ResolveUser).
		{"digits only refused", "12", "", true},
		{"fullwidth digits refused", "\uff11\uff12", "", true},
		{"digits with a letter", "12a", "12a", false},
		// Issue 31: what strconv.ParseInt reads, signs and zeros included.
		{"plus one", "+1", "", true},
		{"plus zeros", "+0002", "", true},
		{"minus zero", "-0", "", true},
		{"leading zeros", "007", "", true},
		{"zero", "0", "", true},
		{"min int64", "-9223372036854775808", "", true},
		{"beyond int64", "99999999999999999999", "", true},
		{"fullwidth plus one", "\uff0b\uff11", "", true},
		{"plus one with spaces", " +1 ", "", true},
		{"sign alone", "+", "+", false},
		{"starts like an option", "-h", "", true},
		{"starts like a long option", "--json", "", true},
		{"fullwidth hyphen first", "\uff0dx", "", true},
		{"hyphen inside", "a-h", "a-h", false},
		{"fullwidth at reads as an email", "ann\uff20plat.test", "", true},
		{"hex is a name", "0x1", "0x1", false},
		{"underscore digits are a name", "1_000", "1_000", false},
		{"combining grapheme joiner", "sa\u034fm", "", true},
		{"variation selector", "sam\ufe0f", "", true},
		{"hangul filler", "sam\u3164", "", true},
		{"tag character", "sam\U000e0041", "", true},
		{"space", "sam fox", "", true},
		{"tab", "sam\tfox", "", true},
		{"RTL override", "\u202esam", "", true},
		{"zero-width joiner", "sa\u200dm", "", true},
		{"empty", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ident.Username(tc.in)
			if tc.bad {
				if !errors.Is(err, ident.ErrInvalid) {
					t.Fatalf("Username(%q) = %q, %v; want ErrInvalid", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Username(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

// TestKeyLookAlikes: every look-alike pair is one key, whether the strict
// form accepts it or not (stored identifiers of earlier releases).
func TestKeyLookAlikes(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"sam@plat.test", "\u017fam@plat.test"},
		{"sam@plat.test", "SAM@PLAT.TEST"},
		{"kim@plat.test", "\u212Aim@plat.test"},
		{"sam", "\u017fam"}, // a username the strict form refuses still collides
		{"dan", "\uff24\uff41\uff4e"},
		{"strasse", "stra\u00dfe"},
		{"ann@xn--bcher-kva.example", "ann@b\u00fccher.example"},
	} {
		if !ident.Same(tc.a, tc.b) {
			t.Errorf("Same(%q, %q) = false (keys %q, %q); want true", tc.a, tc.b, ident.Key(tc.a), ident.Key(tc.b))
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"sam@plat.test", "sam@plat.tests"},
		{"sam", "sam@plat.test"}, // a username is never an email
		{"", ""},
		{"ann", "anne"},
	} {
		if ident.Same(tc.a, tc.b) {
			t.Errorf("Same(%q, %q) = true; want false", tc.a, tc.b)
		}
	}
}

// TestReadsAsID: a USER argument reads as an ID exactly when
// strconv.ParseInt's syntax takes it (whatever the number's size).
func TestReadsAsID(t *testing.T) {
	for _, s := range []string{"1", "+1", "-1", "-0", "+0002", "007", "99999999999999999999"} {
		if !ident.ReadsAsID(s) {
			t.Errorf("ReadsAsID(%q) = false; want true", s)
		}
		if _, err := strconv.ParseInt(s, 10, 64); err != nil && !errors.Is(err, strconv.ErrRange) {
			t.Errorf("strconv.ParseInt(%q) = %v: not a number's syntax", s, err)
		}
	}
	for _, s := range []string{"", "+", "-", "+-1", "1a", "0x1", "1_000", " 1", "\uff11", "a"} {
		if ident.ReadsAsID(s) {
			t.Errorf("ReadsAsID(%q) = true; want false", s)
		}
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			t.Errorf("strconv.ParseInt(%q) takes it, ReadsAsID does not", s)
		}
	}
}

// TestDefaultIgnorable: the derived property is Unicode 15.0's
// Default_Ignorable_Code_Point, as DerivedCoreProperties.txt lists it
// (the oracle below, 4,174 code points); a later toolchain's Unicode
// may add to it, never take from it.
func TestDefaultIgnorable(t *testing.T) {
	want := [][2]rune{
		{0x00AD, 0x00AD}, {0x034F, 0x034F}, {0x061C, 0x061C}, {0x115F, 0x1160}, {0x17B4, 0x17B5},
		{0x180B, 0x180F}, {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x206F}, {0x3164, 0x3164},
		{0xFE00, 0xFE0F}, {0xFEFF, 0xFEFF}, {0xFFA0, 0xFFA0}, {0xFFF0, 0xFFF8}, {0x1BCA0, 0x1BCA3},
		{0x1D173, 0x1D17A}, {0xE0000, 0xE0FFF},
	}
	in := func(r rune) bool {
		for _, w := range want {
			if r >= w[0] && r <= w[1] {
				return true
			}
		}
		return false
	}
	n := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		got := ident.DefaultIgnorable(r)
		if got {
			n++
		}
		if in(r) && !got {
			t.Errorf("DefaultIgnorable(%U) = false; DerivedCoreProperties 15.0 lists it", r)
		}
		if !in(r) && got && unicode.Version == "15.0.0" {
			t.Errorf("DefaultIgnorable(%U) = true; DerivedCoreProperties 15.0 does not list it", r)
		}
	}
	if unicode.Version == "15.0.0" && n != 4174 {
		t.Errorf("%d default ignorables; Unicode 15.0 has 4,174", n)
	}
	// Excluded by the derivation: visible format characters and spaces.
	for _, r := range []rune{0x0600, 0x06DD, 0x110BD, 0xFFF9, 0xFFFB, 0x13430, 0x1343F, ' ', 0x00A0, 0x3000, 0x2800, 'A'} {
		if ident.DefaultIgnorable(r) {
			t.Errorf("DefaultIgnorable(%U) = true; want false", r)
		}
	}
}

// TestName: a display name holds no hidden character (joiners only where
// a script needs them) and at least one visible one.
func TestName(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"plain", "Pat Doe", true},
		{"scripts", "Zo\u00eb \u00c4rger \u65e5\u672c\u8a9e \u0627\u0644\u0639\u0631\u0628\u064a\u0629", true},
		{"ZWNJ between Persian letters", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645", true},
		{"ZWJ after a Devanagari virama", "\u0915\u094d\u200d\u0937", true},
		{"ZWNJ after a Devanagari virama", "\u0915\u094d\u200c\u0937", true},
		{"emoji", "Pat \U0001f600", true},
		{"punctuation only", "...", true},
		{"braille blank between words", "Pat\u2800Doe", true},
		{"private use beside letters", "Pat \uf8ff", true},
		{"combining accent", "Jose\u0301", true},
		{"ZWJ between Latin letters", "Pa\u200dt", false},
		{"ZWNJ between Latin letters", "Pa\u200ct", false},
		{"ZWJ emoji sequence", "\U0001f469\u200d\U0001f4bb", false},
		{"trailing ZWJ", "Pat\u200d", false},
		{"lone ZWNJ", "\u200c", false},
		{"variation selector 16", "Pat \u2764\ufe0f", false},
		{"combining grapheme joiner", "Pa\u034ft", false},
		{"tag characters", "Pat\U000e0041\U000e0042", false},
		{"tag cancel", "Pat\U000e007f", false},
		{"hangul filler only", "\u3164", false},
		{"hangul fillers only", "\u3164\u3164\u3164", false},
		{"halfwidth hangul filler", "\uffa0", false},
		{"hangul filler beside letters", "Pat\u3164", false},
		{"braille blank only", "\u2800\u2800", false},
		{"null notehead only", "\U0001d159", false},
		{"spaces only", "\u3000\u00a0", false},
		{"combining marks only", "\u0301\u0308", false},
		{"private use only", "\uf8ff", false},
		{"zero-width space", "Pat\u200bDoe", false},
		{"bidi override", "\u202eeoD taP", false},
		{"soft hyphen", "Pat\u00adDoe", false},
		{"BOM", "\ufeffPat", false},
		{"word joiner", "Pat\u2060", false},
		{"interlinear annotation", "Pat\ufff9x\ufffb", false},
		{"ESC", "Pat\x1b[2J", false},
		{"C1", "Pat\u009b", false},
		{"line separator", "Pat\u2028Doe", false},
		{"invalid UTF-8", "Pat\xff", false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ident.Name(tc.in)
			if tc.ok && err != nil {
				t.Fatalf("Name(%q) = %v; want nil", tc.in, err)
			}
			if !tc.ok && !errors.Is(err, ident.ErrInvalid) {
				t.Fatalf("Name(%q) = %v; want ErrInvalid", tc.in, err)
			}
		})
	}
}

// TestKeyStable: an identifier an earlier release accepted keeps its key
// (the index entry it was stored under) now that the entries refuse it.
func TestKeyStable(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ann\ufe0f@B\u00fccher.Example", "ann\ufe0f@xn--bcher-kva.example"},
		{"Sa\u034fm@Plat.TEST", "sa\u034fm@plat.test"},
		{"+1", "+1"},
		{"-0", "-0"},
		{"\uff0b\uff11", "+1"},
	} {
		if _, err := ident.Email(tc.in); err == nil && strings.Contains(tc.in, "@") {
			t.Errorf("Email(%q) accepted; the case wants a refused identifier", tc.in)
		}
		if got := ident.Key(tc.in); got != tc.want {
			t.Errorf("Key(%q) = %q; want %q (its key before issue 31)", tc.in, got, tc.want)
		}
	}
}

func ExampleKey() {
	fmt.Println(ident.Key("\u017fam@Plat.Test"), ident.Key("\uff24\uff41\uff4e"))
	// Output: sam@plat.test dan
}

// BenchmarkKey: the cost of the canonical form on every login lookup and
// every unique-index write.
func BenchmarkKey(b *testing.B) {
	for _, in := range []string{"sam.fox@plat.test", "\u017fam.Fox@B\u00fccher.Example", "sam_fox", "\uff53\uff41\uff4d"} {
		b.Run(in, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = ident.Key(in)
			}
		})
	}
}

// TestShown: a developer's email whose domain passes for another (a
// Cyrillic а in "exаmple.com", a registrable IDN) is shown with the
// domain's ASCII form on the pages a user trusts an app by.
func TestShown(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ann@ex\u0430mple.com", "ann@xn--exmple-4nf.com"},
		{"ann@B\u00fccher.example", "ann@xn--bcher-kva.example"},
		{"ann@example.com", "ann@example.com"},
		{"\u0430nn@example.com", "\u0430nn@example.com"},
		{"not an email", "not an email"},
	} {
		if got := ident.Shown(tc.in); got != tc.want {
			t.Errorf("Shown(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
