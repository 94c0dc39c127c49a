package data

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"time"
)

func TestNewSecret(t *testing.T) {
	seen := map[string]bool{}
	for _, prefix := range []string{PrefixClientSecret, PrefixRefreshToken, PrefixAuthCode, PrefixSession} {
		for range 100 {
			s := NewSecret(prefix)
			rest, ok := strings.CutPrefix(s, prefix)
			if !ok {
				t.Fatalf("NewSecret(%q) = %q; want the prefix", prefix, s)
			}
			if len(rest) < 43 || !isBase64URL(rest) {
				t.Fatalf("NewSecret(%q) = %q; want ≥ 43 base64url characters after the prefix", prefix, s)
			}
			if seen[rest] {
				t.Fatalf("NewSecret repeated %q", rest)
			}
			seen[rest] = true
		}
	}
}

func TestNewID(t *testing.T) {
	a, b := NewID("cl_", 12), NewID("cl_", 12)
	if a == b || !strings.HasPrefix(a, "cl_") || len(a) != len("cl_")+16 {
		t.Fatalf("NewID = %q, %q; want two different cl_ IDs of 16 characters", a, b)
	}
	// Without a prefix, 1 in 64 random IDs would start with '-' and be
	// read as a flag by the CLI (`oauthd clients approve -Tb...`).
	for range 2000 {
		if id := NewID("", 16); strings.HasPrefix(id, "-") || len(id) != 22 {
			t.Fatalf("NewID(\"\", 16) = %q; want 22 characters, no leading '-'", id)
		}
	}
}

var testRefreshKey = bytes.Repeat([]byte{7}, RefreshKeySize)

func TestRefreshTokenRoundTrip(t *testing.T) {
	for i := range 100 {
		id := NewFamilyID(time.Now())
		gen := uint64(i) * 1e17 // up to 1.8e19, near the largest uint64
		tok := NewRefreshToken(id, gen, testRefreshKey)
		got, ok := ParseRefreshToken(tok)
		if !ok || got != id {
			t.Fatalf("ParseRefreshToken(%q) = %q, %v; want %q, true", tok, got, ok, id)
		}
		if g, ok := RefreshGeneration(tok); !ok || g != gen {
			t.Fatalf("RefreshGeneration(%q) = %d, %v; want %d, true", tok, g, ok, gen)
		}
		if got := CheckRefreshTag(tok, testRefreshKey); got != TagValid {
			t.Fatalf("CheckRefreshTag(%q) = %v; want TagValid", tok, got)
		}
		if NewRefreshToken(id, 0, testRefreshKey) == tok {
			t.Fatal("NewRefreshToken repeated a token")
		}
	}
}

func TestParseRefreshTokenRejects(t *testing.T) {
	id := NewFamilyID(time.Now())
	good := untagged(id)
	secret := good[strings.IndexByte(good, '.')+1:]
	tagged := NewRefreshToken(id, 0, testRefreshKey)
	tag := tagged[strings.LastIndexByte(tagged, '.')+1:]
	tests := map[string]string{
		"empty":              "",
		"no prefix":          strings.TrimPrefix(good, PrefixRefreshToken),
		"other prefix":       PrefixAuthCode + strings.TrimPrefix(good, PrefixRefreshToken),
		"upper-case prefix":  strings.ToUpper(PrefixRefreshToken) + strings.TrimPrefix(good, PrefixRefreshToken),
		"no dot":             PrefixRefreshToken + id + secret,
		"short family ID":    PrefixRefreshToken + id[1:] + "." + secret,
		"long family ID":     PrefixRefreshToken + id + "A." + secret,
		"short secret":       PrefixRefreshToken + id + "." + secret[1:],
		"long secret":        PrefixRefreshToken + id + "." + secret + "A",
		"padding":            PrefixRefreshToken + id + "." + secret[:42] + "=",
		"standard base64":    PrefixRefreshToken + id[:21] + "+." + secret,
		"dot in secret":      PrefixRefreshToken + id + "." + secret[:42] + ".",
		"space":              PrefixRefreshToken + id + "." + secret[:42] + " ",
		"NUL in family ID":   PrefixRefreshToken + id[:21] + "\x00." + secret,
		"trailing newline":   good + "\n",
		"client secret form": NewSecret(PrefixClientSecret),
		"short tag":          PrefixRefreshToken + id + "." + secret + "." + tag[1:],
		"long tag":           PrefixRefreshToken + id + "." + secret + "." + tag + "A",
		"empty tag":          PrefixRefreshToken + id + "." + secret + ".",
		"three dots":         PrefixRefreshToken + id + "." + secret + "." + tag + "." + tag,
		"tag, short secret":  PrefixRefreshToken + id + "." + secret[1:] + "." + tag,
		"padded tag":         PrefixRefreshToken + id + "." + secret + "." + tag[:21] + "=",
	}
	for name, tok := range tests {
		if got, ok := ParseRefreshToken(tok); ok {
			t.Errorf("%s: ParseRefreshToken(%q) = %q, true; want false", name, tok, got)
		}
	}
}

// taggedV1 returns a refresh token of the tagged form without a
// generation, issued by the releases between tags and generations.
func taggedV1(familyID string, key []byte) string {
	body := PrefixRefreshToken + familyID + "." + NewSecret("")
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(body))
	return body + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:tagBytes])
}

// TestOlderFormsStillParse: the tagged form without a generation and the
// untagged one of earlier releases parse, carry no generation, and the
// tag of the first still checks.
func TestOlderFormsStillParse(t *testing.T) {
	id := NewFamilyID(time.Now())
	for name, tok := range map[string]string{"tagged v1": taggedV1(id, testRefreshKey), "untagged": untagged(id)} {
		if got, ok := ParseRefreshToken(tok); !ok || got != id {
			t.Errorf("%s: ParseRefreshToken(%q) = %q, %v; want %q, true", name, tok, got, ok, id)
		}
		if g, ok := RefreshGeneration(tok); ok {
			t.Errorf("%s: RefreshGeneration = %d, true; want none", name, g)
		}
	}
	if got := CheckRefreshTag(taggedV1(id, testRefreshKey), testRefreshKey); got != TagValid {
		t.Errorf("CheckRefreshTag(tagged v1) = %v; want TagValid", got)
	}
}

// untagged returns a refresh token of the form of earlier releases.
func untagged(familyID string) string {
	return PrefixRefreshToken + familyID + "." + NewSecret("")
}

func TestCheckRefreshTag(t *testing.T) {
	id := NewFamilyID(time.Now())
	tok := NewRefreshToken(id, 5, testRefreshKey)
	body, tag, _ := strings.Cut(tok[len(PrefixRefreshToken):], ".")
	random, tag, _ := strings.Cut(tag, ".")
	otherKey := bytes.Repeat([]byte{8}, RefreshKeySize)
	other := NewFamilyID(time.Now())
	// The last tag character carries 2 unused bits: a spelling with one
	// of them set decodes, without Strict, to the same tag.
	last := strings.IndexByte(sortedB64, tag[21])
	// The generation is what a restore trusts (docs/SECURITY.md): it
	// cannot be changed in, added to or removed from an issued token.
	v1 := taggedV1(id, testRefreshKey)
	v1Random, v1Tag, _ := strings.Cut(v1[len(PrefixRefreshToken)+len(id)+1:], ".")
	tests := []struct {
		name  string
		token string
		want  TagCheck
	}{
		{"issued", tok, TagValid},
		{"issued before generations", v1, TagValid},
		{"untagged form", untagged(id), Untagged},
		{"other key", NewRefreshToken(id, 5, otherKey), TagInvalid},
		{"tag moved to another family", PrefixRefreshToken + other + "." + random + "." + tag, TagInvalid},
		{"other random part", PrefixRefreshToken + body + "." + NewSecret("") + "." + tag, TagInvalid},
		{"tag flipped", PrefixRefreshToken + body + "." + random + "." + flip(tag), TagInvalid},
		{"unused bits set", PrefixRefreshToken + body + "." + random + "." + tag[:21] + string(sortedB64[last^1]), TagInvalid},
		{"higher generation", PrefixRefreshToken + body + "." + withSecret(t, random, func(r []byte) { r[15] = 6 }) + "." + tag, TagInvalid},
		{"much higher generation", PrefixRefreshToken + body + "." + withSecret(t, random, func(r []byte) { r[8] = 0xff }) + "." + tag, TagInvalid},
		{"generation added to an older token", PrefixRefreshToken + body + "." + withSecret(t, v1Random, func(r []byte) {
			copy(r, genMark[:])
			r[15] = 9
		}) + "." + v1Tag, TagInvalid},
		{"mark removed", PrefixRefreshToken + body + "." + withSecret(t, random, func(r []byte) { r[0] = 'x' }) + "." + tag, TagInvalid},
	}
	for _, tc := range tests {
		if _, ok := ParseRefreshToken(tc.token); !ok {
			t.Fatalf("%s: ParseRefreshToken(%q) = false", tc.name, tc.token)
		}
		if got := CheckRefreshTag(tc.token, testRefreshKey); got != tc.want {
			t.Errorf("%s: CheckRefreshTag = %v; want %v", tc.name, got, tc.want)
		}
	}
}

// withSecret returns the base64url secret enc changed by edit.
func withSecret(t *testing.T, enc string, edit func(r []byte)) string {
	r, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		t.Fatal(err)
	}
	edit(r)
	return base64.RawURLEncoding.EncodeToString(r)
}

// TestRefreshTokenFormUnchanged: a token of today reads, to a release
// before generations, as one of its own: the same lengths and dots, the
// tag over the same bytes (so replicas of both releases accept each
// other's tokens while an upgrade rolls).
func TestRefreshTokenFormUnchanged(t *testing.T) {
	id := NewFamilyID(time.Now())
	tok := NewRefreshToken(id, 7, testRefreshKey)
	random, tag, _ := strings.Cut(tok[len(PrefixRefreshToken)+len(id)+1:], ".")
	if strings.Count(tok, ".") != 2 || len(random) != 43 || len(tag) != tagChars {
		t.Fatalf("token %q; want prefix, family ID, 43 characters, a tag of %d", tok, tagChars)
	}
	mac := hmac.New(sha256.New, testRefreshKey)
	mac.Write([]byte(tok[:strings.LastIndexByte(tok, '.')]))
	if want := base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:tagBytes]); tag != want {
		t.Fatalf("tag %q; want the tag of the form before generations, %q", tag, want)
	}
}

// sortedB64 is the base64url alphabet in encoding order.
const sortedB64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// flip changes the first character of s to another of the alphabet.
func flip(s string) string {
	c := byte('A')
	if s[0] == 'A' {
		c = 'B'
	}
	return string(c) + s[1:]
}

func TestHash(t *testing.T) {
	// SHA-256("abc"), FIPS 180-2 appendix B.1.
	want, _ := hex.DecodeString("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
	if got := Hash("abc"); !bytes.Equal(got, want) {
		t.Fatalf("Hash(abc) = %x; want %x", got, want)
	}
	if bytes.Equal(Hash("a"), Hash("b")) {
		t.Fatal("Hash(a) = Hash(b)")
	}
}

func TestEqual(t *testing.T) {
	h := Hash("x")
	tests := []struct {
		name string
		a, b []byte
		want bool
	}{
		{"same", h, Hash("x"), true},
		{"different", h, Hash("y"), false},
		{"prefix", h, h[:31], false},
		{"one empty", h, nil, false},
		{"both empty", nil, nil, false},
		{"both zero-length", []byte{}, []byte{}, false},
	}
	for _, tc := range tests {
		if got := Equal(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: Equal = %v; want %v", tc.name, got, tc.want)
		}
	}
}

func TestFamilyIDsSortByTime(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)
	prev := newFamilyID(t0)
	for i := 1; i < 2000; i++ {
		// 1 ms apart, then jumps of hours and years: every later ID sorts
		// after every earlier one.
		now := t0.Add(time.Duration(i) * time.Millisecond).Add(time.Duration(i*i/100) * time.Hour)
		id := newFamilyID(now)
		if id <= prev {
			t.Fatalf("ID at %v (%s) does not sort after the one before (%s)", now, id, prev)
		}
		if _, ok := ParseRefreshToken(NewRefreshToken(id, 0, testRefreshKey)); !ok {
			t.Fatalf("refresh token of family %q does not parse", id)
		}
		if id[0] == '-' {
			t.Fatalf("ID %q starts with '-'", id)
		}
		prev = id
	}
	a, b := newFamilyID(t0), newFamilyID(t0)
	if a == b || a[:timeChars] != b[:timeChars] {
		t.Fatalf("two IDs of the same millisecond: %q and %q; want the same time prefix and different random parts", a, b)
	}
}

func TestAuthCodeKeysSortByTime(t *testing.T) {
	var prev []byte
	for range 50 {
		code := NewAuthCode(time.Now())
		if !strings.HasPrefix(code, PrefixAuthCode) || len(code) != len(PrefixAuthCode)+timeChars+43 || !IsBase64URL(code[len(PrefixAuthCode):]) {
			t.Fatalf("NewAuthCode(time.Now()) = %q; want the prefix, 7 time characters and 43 random ones", code)
		}
		key := AuthCodeKey(code)
		if !bytes.Equal(key[timeChars:], Hash(code)) {
			t.Fatalf("AuthCodeKey(%q) does not end with the code's SHA-256", code)
		}
		if bytes.Contains(key, []byte(code[len(PrefixAuthCode)+timeChars:])) {
			t.Fatalf("AuthCodeKey(%q) holds the code's secret part", code)
		}
		if prev != nil && bytes.Compare(key[:timeChars], prev[:timeChars]) < 0 {
			t.Fatalf("a later code's key %q sorts before an earlier one's %q", key[:timeChars], prev[:timeChars])
		}
		prev = key
		time.Sleep(time.Millisecond / 4)
	}
	// Anything else gets a key that is a pure function of the string.
	for _, s := range []string{"", "x", PrefixAuthCode, PrefixAuthCode + "abc"} {
		if !bytes.Equal(AuthCodeKey(s), AuthCodeKey(s)) || bytes.Equal(AuthCodeKey(s), AuthCodeKey(s+"!")) {
			t.Fatalf("AuthCodeKey(%q) is not a function of its input", s)
		}
	}
}
