package password

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestHashVerify(t *testing.T) {
	h, err := Hash("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`)
	if !re.MatchString(h) {
		t.Fatalf("Hash = %q; want PHC string matching %s", h, re)
	}
	h2, _ := Hash("correct horse battery staple")
	if h == h2 {
		t.Error("two hashes of one password are equal; salt not random")
	}
	tests := []struct {
		name     string
		password string
		want     bool
	}{
		{"right", "correct horse battery staple", true},
		{"wrong", "correct horse battery stapl", false},
		{"empty", "", false},
		{"case", "Correct horse battery staple", false},
		{"too long", strings.Repeat("a", MaxLength+1), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Verify(h, tc.password)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Verify(h, %q) = %v; want %v", tc.password, got, tc.want)
			}
		})
	}
}

// Parameters come from the string, not from the package constants.
func TestParseReadsParameters(t *testing.T) {
	// Well-formed, but the hash part is made up: parameters parse, the password does not match.
	const enc = "$argon2id$v=19$m=4096,t=3,p=1$c29tZXNhbHQ$n5p4tK3lY+9Q1q3kQn2x7g7H3eS1C8m5r2k4a6b8c0E"
	p, err := parse(enc)
	if err != nil {
		t.Fatal(err)
	}
	if p.memory != 4096 || p.time != 3 || p.threads != 1 {
		t.Errorf("parse = m=%d t=%d p=%d; want 4096, 3, 1", p.memory, p.time, p.threads)
	}
	ok, err := Verify(enc, "password")
	if err != nil || ok {
		t.Errorf("Verify(fake vector) = %v, %v; want false, nil", ok, err)
	}
}

func TestKnownVector(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: argon2id at its production cost")
	}
	// Produced by the reference argon2 CLI:
	// echo -n password | argon2 somesalt -id -t 2 -m 16 -p 1 -l 32 -e
	// (m=65536, other parameters than ours: Verify reads them from the string).
	const enc = "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
	ok, err := Verify(enc, "password")
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Error("Verify(reference vector, password) = false; want true")
	}
}

func TestVerifyMalformed(t *testing.T) {
	good, _ := Hash("pw")
	parts := strings.Split(good, "$")
	tests := []struct{ name, enc string }{
		{"empty", ""},
		{"bcrypt too short", "$2a$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ0123"},
		{"argon2i", strings.Replace(good, "argon2id", "argon2i", 1)},
		{"version", strings.Replace(good, "v=19", "v=16", 1)},
		{"huge memory", strings.Replace(good, "m=19456", "m=4294967295", 1)},
		{"huge time", strings.Replace(good, "t=2", "t=100000", 1)},
		{"zero time", strings.Replace(good, "t=2", "t=0", 1)},
		{"zero threads", strings.Replace(good, "p=1", "p=0", 1)},
		{"missing param", strings.Replace(good, ",p=1", "", 1)},
		{"dup param", strings.Replace(good, "p=1", "m=1", 1)},
		{"unknown param", strings.Replace(good, "p=1", "p=1,x=1", 1)},
		{"bad salt", "$" + strings.Join([]string{parts[1], parts[2], parts[3], "!!!", parts[5]}, "$")},
		{"short hash", "$" + strings.Join([]string{parts[1], parts[2], parts[3], parts[4], "YWJj"}, "$")},
		{"extra field", good + "$x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, err := Verify(tc.enc, "pw")
			if ok || !errors.Is(err, ErrMalformed) {
				t.Errorf("Verify(%q) = %v, %v; want false, ErrMalformed", tc.enc, ok, err)
			}
		})
	}
}

func TestHashRefuses(t *testing.T) {
	if _, err := Hash(""); !errors.Is(err, ErrEmpty) {
		t.Errorf("Hash(\"\") err = %v; want ErrEmpty", err)
	}
	if _, err := Hash(strings.Repeat("x", MaxLength+1)); !errors.Is(err, ErrTooLong) {
		t.Errorf("Hash(long) err = %v; want ErrTooLong", err)
	}
}

func BenchmarkVerify(b *testing.B) {
	h, _ := Hash("correct horse battery staple")
	for b.Loop() {
		Verify(h, "correct horse battery staple")
	}
}

func BenchmarkDummyVerify(b *testing.B) {
	for b.Loop() {
		DummyVerify("correct horse battery staple")
	}
}
