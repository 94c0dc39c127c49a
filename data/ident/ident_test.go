package ident_test

import (
	"errors"
	"fmt"
	"testing"

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
